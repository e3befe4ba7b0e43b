"""Reference solution for 178: how long a rolling update takes and how far capacity may drop."""
import math
import numbers

SOURCES_GBS = {"local_nvme": 7.0, "network_storage": 1.25, "peer_gpu": 50.0}


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


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def max_unavailable(instances, qps, per_instance_qps):
    """The most instances that may be down at once while the rest still carry qps."""
    _integer("instances", instances, 1)
    _positive("qps", qps)
    _positive("per_instance_qps", per_instance_qps)
    needed = math.ceil(qps / per_instance_qps)
    if needed > instances:
        raise ValueError(f"qps: {qps} needs {needed} instances of {per_instance_qps} QPS, only {instances} exist")
    return instances - needed


def plan_update(instances, qps, per_instance_qps, *, weight_bytes, source, drain_s, init_s=0.0,
                max_surge=0, shared_gbs=None):
    """Waves, their length and the whole rolling update's duration."""
    unavailable = max_unavailable(instances, qps, per_instance_qps)
    _positive("weight_bytes", weight_bytes)
    if not isinstance(source, str) or source not in SOURCES_GBS:
        raise ValueError(f"source must be one of {sorted(SOURCES_GBS)}, got {source!r}")
    _non_negative("drain_s", drain_s)
    _non_negative("init_s", init_s)
    _integer("max_surge", max_surge, 0)
    if shared_gbs is not None:
        _positive("shared_gbs", shared_gbs)
    per_wave = unavailable + max_surge
    if per_wave == 0:
        raise ValueError("max_surge: no instance may go down at this load, so max_surge must be >= 1")
    per_wave = min(per_wave, instances)
    waves = math.ceil(instances / per_wave)
    gbs = SOURCES_GBS[source]
    if shared_gbs is not None:
        gbs = min(gbs, shared_gbs / per_wave)
    wave_s = drain_s + weight_bytes / (gbs * 1e9) + init_s
    return {"max_unavailable": unavailable, "per_wave": per_wave, "waves": waves, "wave_s": wave_s,
            "duration_s": waves * wave_s, "peak_instances": instances + min(max_surge, instances - unavailable)}
