"""Reference solution for 173: MIG slices versus whole GPUs."""
import math
import numbers

# H100 80GB MIG profiles: (compute sevenths, memory eighths, instances per GPU); in size order
PROFILES = {
    "1g.10gb": (1, 1, 7),
    "1g.20gb": (1, 2, 4),
    "2g.20gb": (2, 2, 3),
    "3g.40gb": (3, 4, 2),
    "4g.40gb": (4, 4, 1),
    "7g.80gb": (7, 8, 1),
}


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _fraction(name, value):
    _number(name, value)
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def slice_resources(profile, *, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989):
    """What one slice of ``profile`` gets: memory and bandwidth by eighths, compute by sevenths."""
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ValueError(f"profile must be one of {list(PROFILES)}, got {profile!r}")
    _positive("gpu_memory_gb", gpu_memory_gb)
    _positive("gpu_bandwidth_gbs", gpu_bandwidth_gbs)
    _positive("gpu_tflops", gpu_tflops)
    compute, memory, per_gpu = PROFILES[profile]
    return {"memory_gb": gpu_memory_gb * memory / 8, "bandwidth_gbs": gpu_bandwidth_gbs * memory / 8,
            "tflops": gpu_tflops * compute / 7, "per_gpu": per_gpu}


def serve_on_slice(profile, *, weight_bytes, kv_bytes_per_token, context, concurrency, params, input_len,
                   tpot_ms, ttft_ms, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989, mfu=0.5,
                   mem_util=0.9):
    """Does one tenant's model, at its concurrency, fit and meet both latency targets on this slice?"""
    s = slice_resources(profile, gpu_memory_gb=gpu_memory_gb, gpu_bandwidth_gbs=gpu_bandwidth_gbs,
                        gpu_tflops=gpu_tflops)
    _positive("weight_bytes", weight_bytes)
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _integer("context", context, 1)
    _integer("concurrency", concurrency, 1)
    _positive("params", params)
    _integer("input_len", input_len, 1)
    _positive("tpot_ms", tpot_ms)
    _positive("ttft_ms", ttft_ms)
    _fraction("mfu", mfu)
    _fraction("mem_util", mem_util)
    needed = weight_bytes + concurrency * context * kv_bytes_per_token
    memory_ok = needed <= s["memory_gb"] * 1e9 * mem_util
    step_ms = needed / (s["bandwidth_gbs"] * 1e9) * 1e3
    prefill_ms = 2 * params * input_len / (s["tflops"] * 1e12 * mfu) * 1e3
    return {"memory_ok": memory_ok, "step_ms": step_ms, "prefill_ms": prefill_ms,
            "ok": memory_ok and step_ms <= tpot_ms and prefill_ms <= ttft_ms}


def choose_profile(tenants, *, weight_bytes, kv_bytes_per_token, context, concurrency, params, input_len,
                   tpot_ms, ttft_ms, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989, mfu=0.5,
                   mem_util=0.9):
    """The profile that serves every tenant on its own slice with the fewest GPUs (ties: the larger)."""
    _integer("tenants", tenants, 1)
    tenant = dict(weight_bytes=weight_bytes, kv_bytes_per_token=kv_bytes_per_token, context=context,
                  concurrency=concurrency, params=params, input_len=input_len, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                  gpu_memory_gb=gpu_memory_gb, gpu_bandwidth_gbs=gpu_bandwidth_gbs, gpu_tflops=gpu_tflops,
                  mfu=mfu, mem_util=mem_util)
    best = None
    for profile, (_, _, per_gpu) in PROFILES.items():
        if not serve_on_slice(profile, **tenant)["ok"]:
            continue
        gpus = math.ceil(tenants / per_gpu)
        if best is None or gpus <= best["gpus"]:
            best = {"profile": profile, "gpus": gpus}
    if best is None:
        raise ValueError("profile: no MIG profile, not even the whole GPU, serves one tenant within its targets")
    return best
