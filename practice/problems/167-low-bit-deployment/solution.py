"""Reference solution for 167: low-bit deployment (bytes per parameter, GPUs, decode floor)."""
import math
import numbers

FORMATS = ("bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp4")


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def bytes_per_param(fmt, group_size=128):
    """Bytes per weight including scales: int4/fp4 carry one 2-byte scale per group,
    mxfp4 one 1-byte scale per 32 weights."""
    if isinstance(group_size, bool) or not isinstance(group_size, numbers.Integral) or group_size < 1:
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    if fmt in ("bf16", "fp16"):
        return 2.0
    if fmt in ("fp8", "int8"):
        return 1.0
    if fmt in ("int4", "fp4"):
        return 0.5 + 2.0 / group_size
    if fmt == "mxfp4":
        return 0.5 + 1.0 / 32
    raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")


def min_gpus(params, fmt, gpu_mem_gb, *, kv_reserve_gb=0.0, mem_util=0.9, group_size=128,
             choices=(1, 2, 4, 8)):
    """Smallest GPU count in ``choices`` whose usable memory holds the weights and the KV reserve."""
    _positive("params", params)
    _positive("gpu_mem_gb", gpu_mem_gb)
    if isinstance(kv_reserve_gb, bool) or not isinstance(kv_reserve_gb, numbers.Real) \
            or not math.isfinite(kv_reserve_gb) or not kv_reserve_gb >= 0:
        raise ValueError(f"kv_reserve_gb must be a finite number >= 0, got {kv_reserve_gb!r}")
    if isinstance(mem_util, bool) or not isinstance(mem_util, numbers.Real) or not 0 < mem_util <= 1:
        raise ValueError(f"mem_util must be in (0, 1], got {mem_util!r}")
    if not isinstance(choices, (list, tuple)) or len(choices) == 0 or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1
                                for n in choices):
        raise ValueError(f"choices must be a non-empty list of integers >= 1, got {choices!r}")
    need = params * bytes_per_param(fmt, group_size) + kv_reserve_gb * 1e9
    for n in sorted(choices):
        if need <= n * gpu_mem_gb * 1e9 * mem_util:
            return n
    raise ValueError(f"choices: even {max(choices)} GPUs cannot hold {need / 1e9:.1f} GB")


def decode_floor_ms(params, fmt, gpus, gpu_bandwidth_gbs, group_size=128):
    """The lower bound of one decode step: read every weight byte once over all GPUs' bandwidth."""
    _positive("params", params)
    if isinstance(gpus, bool) or not isinstance(gpus, numbers.Integral) or gpus < 1:
        raise ValueError(f"gpus must be an integer >= 1, got {gpus!r}")
    _positive("gpu_bandwidth_gbs", gpu_bandwidth_gbs)
    weight_bytes = params * bytes_per_param(fmt, group_size)
    return weight_bytes / (gpus * gpu_bandwidth_gbs * 1e9) * 1e3
