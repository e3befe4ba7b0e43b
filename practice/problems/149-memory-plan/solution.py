"""Reference solution for 149: the memory plan before deployment."""
import math
import numbers

BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def bytes_per_element(dtype):
    """Bytes of one element stored in ``dtype``."""
    if not isinstance(dtype, str) or dtype not in BYTES:
        raise ValueError(f"dtype must be one of {', '.join(BYTES)}, got {dtype!r}")
    return BYTES[dtype]


def kv_bytes_per_token(num_layers, num_kv_heads, head_dim, dtype):
    """K and V of one token in every layer: 2 * layers * kv_heads * head_dim * bytes."""
    _count("num_layers", num_layers)
    _count("num_kv_heads", num_kv_heads)
    _count("head_dim", head_dim)
    return 2 * num_layers * num_kv_heads * head_dim * bytes_per_element(dtype)


def memory_plan(params, num_layers, num_kv_heads, head_dim, *, weight_dtype, kv_dtype, gpus,
                gpu_mem_gb, mem_util=0.9, reserve_gb=2.0, context_len=None, batch=None):
    """Weights, KV per token, the KV budget, and how many tokens / sequences fit."""
    _positive("params", params)
    _count("gpus", gpus)
    _positive("gpu_mem_gb", gpu_mem_gb)
    if isinstance(mem_util, bool) or not isinstance(mem_util, numbers.Real) or not 0 < mem_util <= 1:
        raise ValueError(f"mem_util must be in (0, 1], got {mem_util!r}")
    if isinstance(reserve_gb, bool) or not isinstance(reserve_gb, numbers.Real) \
            or not math.isfinite(reserve_gb) or not reserve_gb >= 0:
        raise ValueError(f"reserve_gb must be a finite number >= 0, got {reserve_gb!r}")
    if context_len is not None:
        _count("context_len", context_len)
    if batch is not None:
        _count("batch", batch)
    weights = params * bytes_per_element(weight_dtype)
    per_token = kv_bytes_per_token(num_layers, num_kv_heads, head_dim, kv_dtype)
    budget = gpus * (gpu_mem_gb * 1e9 * mem_util - reserve_gb * 1e9) - weights
    if budget <= 0:
        raise ValueError(f"gpus: the weights ({weights / 1e9:.1f} GB) leave no room for KV cache "
                         f"on {gpus} GPU(s) of {gpu_mem_gb} GB")
    tokens = math.floor(budget / per_token)
    return {
        "weight_bytes": weights,
        "kv_bytes_per_token": per_token,
        "kv_budget_bytes": budget,
        "kv_tokens": tokens,
        "max_batch": tokens // context_len if context_len is not None else None,
        "max_context": tokens // batch if batch is not None else None,
    }
