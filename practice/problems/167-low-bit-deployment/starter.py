"""167. 估算：低比特部署。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 167
"""
import math


def bytes_per_param(fmt, group_size=128):
    """Bytes per weight, scales included, for "bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp4"."""
    raise NotImplementedError


def min_gpus(params, fmt, gpu_mem_gb, *, kv_reserve_gb=0.0, mem_util=0.9, group_size=128,
             choices=(1, 2, 4, 8)):
    """Smallest n in choices with params * bytes_per_param + kv_reserve_gb * 1e9
    <= n * gpu_mem_gb * 1e9 * mem_util."""
    raise NotImplementedError


def decode_floor_ms(params, fmt, gpus, gpu_bandwidth_gbs, group_size=128):
    """params * bytes_per_param / (gpus * gpu_bandwidth_gbs * 1e9), in ms."""
    raise NotImplementedError
