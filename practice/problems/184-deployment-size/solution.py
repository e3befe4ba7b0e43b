"""Reference solution for 184: deployment size, from QPS to GPU count."""
import math
import numbers


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0 \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0 \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")


def _factor(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 1 \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number >= 1, got {value!r}")


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def max_batch_by_kv(kv_budget_bytes, kv_bytes_per_token, avg_context):
    """Largest number of sequences of ``avg_context`` tokens whose KV fits in the budget."""
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _positive("avg_context", avg_context)
    if isinstance(kv_budget_bytes, bool) or not isinstance(kv_budget_bytes, numbers.Real) \
            or not math.isfinite(kv_budget_bytes):
        raise ValueError(f"kv_budget_bytes must be a finite number, got {kv_budget_bytes!r}")
    if kv_budget_bytes <= 0:
        return 0
    return math.floor(kv_budget_bytes / (kv_bytes_per_token * avg_context))


def decode_step_ms(batch, avg_context, *, weight_bytes, kv_bytes_per_token, bandwidth_gbs,
                   overhead_ms=0.0):
    """Memory-bound decode step: read the weights once and every sequence's KV."""
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 0:
        raise ValueError(f"batch must be an integer >= 0, got {batch!r}")
    _positive("avg_context", avg_context)
    _positive("weight_bytes", weight_bytes)
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _positive("bandwidth_gbs", bandwidth_gbs)
    _non_negative("overhead_ms", overhead_ms)
    bytes_read = weight_bytes + batch * avg_context * kv_bytes_per_token
    return bytes_read / (bandwidth_gbs * 1e9) * 1e3 + overhead_ms


def prefill_rps(input_len, *, params, gpus_per_instance, gpu_tflops, mfu=0.4):
    """Prompts per second one instance can prefill when compute-bound."""
    _count("input_len", input_len)
    _positive("params", params)
    _count("gpus_per_instance", gpus_per_instance)
    _positive("gpu_tflops", gpu_tflops)
    _fraction("mfu", mfu)
    flops_per_request = 2.0 * params * input_len
    return gpus_per_instance * gpu_tflops * 1e12 * mfu / flops_per_request


def plan(qps, input_len, output_len, tpot_ms, *, params, weight_bytes, kv_bytes_per_token,
         gpus_per_instance, gpu_mem_gb, gpu_bandwidth_gbs, gpu_tflops, mfu=0.4, mem_util=0.9,
         reserve_gb=4.0, overhead_ms=0.0, headroom=1.3):
    """Size a chat service in a decode pool and a prefill pool."""
    _positive("qps", qps)
    _count("input_len", input_len)
    _count("output_len", output_len)
    _positive("tpot_ms", tpot_ms)
    _positive("params", params)
    _positive("weight_bytes", weight_bytes)
    _positive("kv_bytes_per_token", kv_bytes_per_token)
    _count("gpus_per_instance", gpus_per_instance)
    _positive("gpu_mem_gb", gpu_mem_gb)
    _positive("gpu_bandwidth_gbs", gpu_bandwidth_gbs)
    _positive("gpu_tflops", gpu_tflops)
    _fraction("mfu", mfu)
    _fraction("mem_util", mem_util)
    _non_negative("reserve_gb", reserve_gb)
    _non_negative("overhead_ms", overhead_ms)
    _factor("headroom", headroom)

    avg_context = input_len + output_len / 2
    bandwidth_gbs = gpus_per_instance * gpu_bandwidth_gbs
    kv_budget = gpus_per_instance * (gpu_mem_gb * 1e9 * mem_util - reserve_gb * 1e9) - weight_bytes
    kv_batch = max_batch_by_kv(kv_budget, kv_bytes_per_token, avg_context)
    if kv_batch < 1:
        raise ValueError("gpu_mem_gb: not even one sequence fits in the KV budget "
                         f"({kv_budget / 1e9:.1f} GB left after weights)")

    def step(b):
        return decode_step_ms(b, avg_context, weight_bytes=weight_bytes,
                              kv_bytes_per_token=kv_bytes_per_token, bandwidth_gbs=bandwidth_gbs,
                              overhead_ms=overhead_ms)

    per_sequence_ms = avg_context * kv_bytes_per_token / (bandwidth_gbs * 1e9) * 1e3
    tpot_batch = math.floor((tpot_ms - step(0)) / per_sequence_ms)
    if tpot_batch < 1:
        raise ValueError(f"tpot_ms: even a batch of 1 takes {step(1):.2f} ms per step, "
                         f"over the target {tpot_ms} ms")

    batch = min(kv_batch, tpot_batch)
    bound = "kv" if kv_batch <= tpot_batch else "tpot"
    step_ms = step(batch)
    decode_rps = batch / (output_len * step_ms / 1e3)
    decode_instances = math.ceil(qps * headroom / decode_rps)
    p_rps = prefill_rps(input_len, params=params, gpus_per_instance=gpus_per_instance,
                        gpu_tflops=gpu_tflops, mfu=mfu)
    prefill_instances = math.ceil(qps * headroom / p_rps)
    return {
        "batch": batch,
        "bound": bound,
        "step_ms": step_ms,
        "decode_rps": decode_rps,
        "decode_instances": decode_instances,
        "prefill_rps": p_rps,
        "prefill_instances": prefill_instances,
        "gpus": (decode_instances + prefill_instances) * gpus_per_instance,
    }
