"""Reference solution for 165: PD multiplexing on one GPU: decode gets n of the GPU's SMs, prefill the
rest; decode is memory-bound (its bandwidth saturates at a few SMs), prefill compute-bound."""
import math
import numbers

GPU_KEYS = ("sms", "peak_flops", "bandwidth", "bw_sat_sms", "mfu", "step_overhead")
MODEL_KEYS = ("params", "weight_bytes", "kv_bytes_per_token")


def _real(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _gpu(gpu):
    ok = isinstance(gpu, dict) and set(gpu) == set(GPU_KEYS) and _whole(gpu["sms"]) and gpu["sms"] >= 1 \
        and _whole(gpu["bw_sat_sms"]) and gpu["bw_sat_sms"] >= 1 \
        and all(_real(gpu[k]) for k in ("peak_flops", "bandwidth", "mfu", "step_overhead"))
    if ok:
        ok = gpu["peak_flops"] > 0 and gpu["bandwidth"] > 0 and 0 < gpu["mfu"] <= 1 and gpu["step_overhead"] >= 0
    if not ok:
        raise ValueError(f"gpu must be a dict with exactly the keys {GPU_KEYS} (sms, bw_sat_sms: integers >= 1; "
                         f"peak_flops, bandwidth > 0; mfu in (0, 1]; step_overhead >= 0), got {gpu!r}")


def _model(model):
    ok = isinstance(model, dict) and set(model) == set(MODEL_KEYS) and all(_real(model[k]) for k in MODEL_KEYS)
    if ok:
        ok = model["params"] > 0 and model["weight_bytes"] > 0 and model["kv_bytes_per_token"] >= 0
    if not ok:
        raise ValueError(f"model must be a dict with exactly the keys {MODEL_KEYS} (params, weight_bytes > 0; "
                         f"kv_bytes_per_token >= 0), got {model!r}")


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _decode(gpu, model, n, batch, context):
    share = n / gpu["sms"]
    compute = 2 * model["params"] * batch / (gpu["peak_flops"] * gpu["mfu"] * share)
    bandwidth = gpu["bandwidth"] * min(1.0, n / gpu["bw_sat_sms"])
    memory = (model["weight_bytes"] + model["kv_bytes_per_token"] * context) / bandwidth
    return max(compute, memory) + gpu["step_overhead"]


def _prefill(gpu, model, n):
    return gpu["peak_flops"] * gpu["mfu"] * ((gpu["sms"] - n) / gpu["sms"]) / (2 * model["params"])


def decode_step_s(gpu, model, decode_sms, batch, context):
    """One decode step of `batch` requests over `context` cached tokens on decode_sms SMs."""
    _gpu(gpu)
    _model(model)
    _int("decode_sms", decode_sms, 1)
    if decode_sms > gpu["sms"]:
        raise ValueError(f"decode_sms must be at most the GPU's {gpu['sms']} SMs, got {decode_sms}")
    _int("batch", batch, 1)
    _int("context", context, 0)
    return _decode(gpu, model, decode_sms, batch, context)


def split_sms(gpu, model, batch, context, tpot_slo_s):
    """The fewest SMs that keep decode within the TPOT SLO; the rest prefill at compute speed."""
    _gpu(gpu)
    _model(model)
    _int("batch", batch, 1)
    _int("context", context, 0)
    if not _real(tpot_slo_s) or tpot_slo_s <= 0:
        raise ValueError(f"tpot_slo_s must be a finite number > 0, got {tpot_slo_s!r}")
    for n in range(1, gpu["sms"] + 1):
        step = _decode(gpu, model, n, batch, context)
        if step <= tpot_slo_s:
            return {"decode_sms": n, "decode_step_s": step, "prefill_tokens_per_s": _prefill(gpu, model, n)}
    return {"decode_sms": -1, "decode_step_s": _decode(gpu, model, gpu["sms"], batch, context),
            "prefill_tokens_per_s": 0.0}
