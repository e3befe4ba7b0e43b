"""184. 估算：部署规模——从 QPS 到 GPU 数。

Write the four functions below; see problem.md for the rules, units and the worked example.
Judge with:  python practice/judge.py 184
"""
import math


def max_batch_by_kv(kv_budget_bytes, kv_bytes_per_token, avg_context):
    """Largest integer batch whose KV (batch * avg_context * kv_bytes_per_token bytes) fits in
    kv_budget_bytes; 0 when kv_budget_bytes <= 0.

    ValueError (naming the field) when kv_bytes_per_token or avg_context is not > 0.
    """
    raise NotImplementedError


def decode_step_ms(batch, avg_context, *, weight_bytes, kv_bytes_per_token, bandwidth_gbs,
                   overhead_ms=0.0):
    """Time of one memory-bound decode step in ms:
    (weight_bytes + batch * avg_context * kv_bytes_per_token) / (bandwidth_gbs * 1e9) s, plus
    overhead_ms. bandwidth_gbs is the whole instance's bandwidth in GB/s (1 GB = 1e9 bytes).
    """
    raise NotImplementedError


def prefill_rps(input_len, *, params, gpus_per_instance, gpu_tflops, mfu=0.4):
    """Requests per second one instance prefills: gpus * gpu_tflops * 1e12 * mfu FLOP/s over
    2 * params * input_len FLOPs per request.
    """
    raise NotImplementedError


def plan(qps, input_len, output_len, tpot_ms, *, params, weight_bytes, kv_bytes_per_token,
         gpus_per_instance, gpu_mem_gb, gpu_bandwidth_gbs, gpu_tflops, mfu=0.4, mem_util=0.9,
         reserve_gb=4.0, overhead_ms=0.0, headroom=1.3):
    """Return {"batch", "bound", "step_ms", "decode_rps", "decode_instances", "prefill_rps",
    "prefill_instances", "gpus"} as described in problem.md.
    """
    raise NotImplementedError
