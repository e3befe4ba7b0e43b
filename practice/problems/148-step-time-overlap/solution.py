"""Reference solution for 148: the step-time breakdown, and CPU scheduling overlapped with the GPU."""
import math
import numbers

SETUP_KEYS = ("params", "weight_bytes", "kv_bytes_per_token", "peak_flops", "bandwidth", "mfu",
              "step_overhead", "comm_s_per_token", "kv_serial")


def _real(name, value, low, low_ok=True, high=math.inf):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not (value >= low if low_ok else value > low) or value > high:
        raise ValueError(f"{name} out of range, got {value!r}")


def step_breakdown(tokens, context, setup):
    """The terms of one step's time (seconds) under the course's roofline."""
    for name, value in (("tokens", tokens), ("context", context)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if not isinstance(setup, dict) or set(setup) != set(SETUP_KEYS):
        raise ValueError(f"setup must have exactly the keys {', '.join(SETUP_KEYS)}")
    for name in ("params", "peak_flops", "bandwidth"):
        _real(f"setup.{name}", setup[name], 0, low_ok=False)
    for name in ("weight_bytes", "kv_bytes_per_token", "step_overhead", "comm_s_per_token"):
        _real(f"setup.{name}", setup[name], 0)
    _real("setup.mfu", setup["mfu"], 0, low_ok=False, high=1)
    _real("setup.kv_serial", setup["kv_serial"], 0, high=1)
    compute = 2 * setup["params"] * tokens / (setup["peak_flops"] * setup["mfu"])
    kv = setup["kv_bytes_per_token"] * context
    memory = (setup["weight_bytes"] + kv * (1 - setup["kv_serial"])) / setup["bandwidth"]
    serial = kv * setup["kv_serial"] / setup["bandwidth"]
    comm = setup["comm_s_per_token"] * tokens
    total = max(compute, memory) + serial + setup["step_overhead"] + comm
    return {"compute": compute, "memory": memory, "serial": serial, "overhead": setup["step_overhead"],
            "comm": comm, "bound": "compute" if compute > memory else "memory", "total": total}


def overlap_timeline(gpu_ms, cpu_ms, overlap):
    """GPU start times, total time and GPU idle time of a run of steps, with or without overlap."""
    if not isinstance(gpu_ms, list) or len(gpu_ms) == 0:
        raise ValueError("gpu_ms must be a non-empty list")
    if not isinstance(cpu_ms, list) or len(cpu_ms) != len(gpu_ms):
        raise ValueError("cpu_ms must have the same length as gpu_ms")
    for g in gpu_ms:
        _real("gpu_ms", g, 0)
    for c in cpu_ms:
        _real("cpu_ms", c, 0)
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    starts = []
    cpu_end = cpu_ms[0]
    gpu_end = 0.0
    for i, g in enumerate(gpu_ms):
        start = max(gpu_end, cpu_end)
        starts.append(start)
        gpu_end = start + g
        if i + 1 < len(gpu_ms):
            cpu_end = (max(cpu_end, start) if overlap else gpu_end) + cpu_ms[i + 1]
    return {"gpu_start_ms": starts, "total_ms": gpu_end, "gpu_idle_ms": gpu_end - sum(gpu_ms)}
