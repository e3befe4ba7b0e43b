"""173. 估算：MIG 切片还是整卡。

Write the three functions below; see problem.md for the profile table and the worked example.
Judge with:  python practice/judge.py 173
"""
import math


def slice_resources(profile, *, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989):
    """Return {"memory_gb", "bandwidth_gbs", "tflops", "per_gpu"} of one slice of profile."""
    raise NotImplementedError


def serve_on_slice(profile, *, weight_bytes, kv_bytes_per_token, context, concurrency, params, input_len,
                   tpot_ms, ttft_ms, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989, mfu=0.5,
                   mem_util=0.9):
    """Return {"memory_ok", "step_ms", "prefill_ms", "ok"} for one tenant on one slice."""
    raise NotImplementedError


def choose_profile(tenants, *, weight_bytes, kv_bytes_per_token, context, concurrency, params, input_len,
                   tpot_ms, ttft_ms, gpu_memory_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989, mfu=0.5,
                   mem_util=0.9):
    """Return {"profile", "gpus"}: the fewest GPUs, ties to the larger profile."""
    raise NotImplementedError
