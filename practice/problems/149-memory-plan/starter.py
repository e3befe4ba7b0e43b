"""149. 部署前的显存账：权重、KV 与能放下的上下文。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 149
"""
import math


def bytes_per_element(dtype):
    """Bytes per element for "fp32", "bf16", "fp16", "fp8", "int8", "int4"."""
    raise NotImplementedError


def kv_bytes_per_token(num_layers, num_kv_heads, head_dim, dtype):
    """2 * num_layers * num_kv_heads * head_dim * bytes_per_element(dtype)."""
    raise NotImplementedError


def memory_plan(params, num_layers, num_kv_heads, head_dim, *, weight_dtype, kv_dtype, gpus,
                gpu_mem_gb, mem_util=0.9, reserve_gb=2.0, context_len=None, batch=None):
    """Return {"weight_bytes", "kv_bytes_per_token", "kv_budget_bytes", "kv_tokens",
    "max_batch", "max_context"} as described in problem.md."""
    raise NotImplementedError
