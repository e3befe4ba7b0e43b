"""Reference solution for 175: cold starts, Little's law and warm spares when scaling out."""
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


def cold_start_s(weight_bytes, source, *, init_s=0.0, concurrent=1, shared_gbs=None):
    """Seconds before a new instance serves: its weights from ``source`` plus ``init_s``. With
    ``shared_gbs``, ``concurrent`` instances loading at once share that much bandwidth."""
    _positive("weight_bytes", weight_bytes)
    if not isinstance(source, str) or source not in SOURCES_GBS:
        raise ValueError(f"source must be one of {sorted(SOURCES_GBS)}, got {source!r}")
    _non_negative("init_s", init_s)
    _integer("concurrent", concurrent, 1)
    gbs = SOURCES_GBS[source]
    if shared_gbs is not None:
        _positive("shared_gbs", shared_gbs)
        gbs = min(gbs, shared_gbs / concurrent)
    return weight_bytes / (gbs * 1e9) + init_s


def desired_instances(qps, latency_s, target_outstanding):
    """Little's law: qps x latency_s requests are in flight; keep target_outstanding per instance."""
    _positive("qps", qps)
    _positive("latency_s", latency_s)
    _positive("target_outstanding", target_outstanding)
    return math.ceil(qps * latency_s / target_outstanding)


def scale_out(qps_now, ramp_qps_per_s, *, per_instance_qps, instances_now, interval_s, cold_start_s):
    """How many warm spares a ramp needs: the load grows while the autoscaler notices and new
    instances load their weights."""
    _positive("qps_now", qps_now)
    _non_negative("ramp_qps_per_s", ramp_qps_per_s)
    _positive("per_instance_qps", per_instance_qps)
    _integer("instances_now", instances_now, 0)
    _non_negative("interval_s", interval_s)
    _non_negative("cold_start_s", cold_start_s)
    lead_s = float(interval_s + cold_start_s)
    qps_at_ready = float(qps_now + ramp_qps_per_s * lead_s)
    needed = math.ceil(qps_at_ready / per_instance_qps)
    return {"lead_s": lead_s, "qps_at_ready": qps_at_ready, "instances_needed": needed,
            "warm_spares": max(0, needed - instances_now)}
