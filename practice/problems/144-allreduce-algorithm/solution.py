"""Reference solution for 144: choosing an all-reduce algorithm."""
import math
import numbers

ALGORITHMS = ("one_shot", "two_shot", "ring", "nvls")       # also the tie order
TOPOLOGIES = {"ring": ("ring",), "switch": ("one_shot", "two_shot", "ring"),
              "nvls": ("one_shot", "two_shot", "ring", "nvls")}


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name, value):
    _number(name, value)
    if not value >= 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _gpus(gpus):
    if isinstance(gpus, bool) or not isinstance(gpus, numbers.Integral) or gpus < 2:
        raise ValueError(f"gpus must be an integer >= 2, got {gpus!r}")


def allreduce_time_us(algorithm, message_bytes, gpus, *, alpha_us, link_gbs):
    """Time of one all-reduce of message_bytes over gpus GPUs with the given algorithm."""
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}, got {algorithm!r}")
    _non_negative("message_bytes", message_bytes)
    _gpus(gpus)
    _non_negative("alpha_us", alpha_us)
    _positive("link_gbs", link_gbs)
    once_us = message_bytes / (link_gbs * 1e3)          # the whole message over one link direction
    n = gpus
    if algorithm == "one_shot":
        return alpha_us + (n - 1) * once_us
    if algorithm == "two_shot":
        return 2 * alpha_us + 2 * (n - 1) / n * once_us
    if algorithm == "ring":
        return 2 * (n - 1) * alpha_us + 2 * (n - 1) / n * once_us
    return 2 * alpha_us + once_us


def choose_allreduce(message_bytes, gpus, *, alpha_us, link_gbs, topology):
    """The fastest algorithm the topology offers (ties: the earlier in ALGORITHMS)."""
    if not isinstance(topology, str) or topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {sorted(TOPOLOGIES)}, got {topology!r}")
    best = None
    for algorithm in ALGORITHMS:
        if algorithm not in TOPOLOGIES[topology]:
            continue
        t = allreduce_time_us(algorithm, message_bytes, gpus, alpha_us=alpha_us, link_gbs=link_gbs)
        if best is None or t < best["time_us"]:
            best = {"algorithm": algorithm, "time_us": t}
    return best


def crossover_bytes(gpus, *, alpha_us, link_gbs):
    """Message size at which one-shot and two-shot take equal time; None when gpus == 2."""
    _gpus(gpus)
    _non_negative("alpha_us", alpha_us)
    _positive("link_gbs", link_gbs)
    n = gpus
    if n == 2:
        return None
    return alpha_us * link_gbs * 1e3 * n / ((n - 1) * (n - 2))


def bus_bandwidth_gbs(message_bytes, time_us, gpus):
    """nccl-tests' bus bandwidth: algorithm bandwidth x 2 (n - 1) / n, in GB/s."""
    _positive("message_bytes", message_bytes)
    _positive("time_us", time_us)
    _gpus(gpus)
    return message_bytes / (time_us * 1e3) * 2 * (gpus - 1) / gpus
