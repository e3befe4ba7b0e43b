"""175. 估算：上线与扩容——冷启动和热备。

Write the three functions below; see problem.md for the rules, units and the worked example.
Judge with:  python practice/judge.py 175
"""
import math


def cold_start_s(weight_bytes, source, *, init_s=0.0, concurrent=1, shared_gbs=None):
    """weight_bytes / (bandwidth of source, or shared_gbs / concurrent if smaller) + init_s."""
    raise NotImplementedError


def desired_instances(qps, latency_s, target_outstanding):
    """ceil(qps * latency_s / target_outstanding): Little's law over a per-instance target."""
    raise NotImplementedError


def scale_out(qps_now, ramp_qps_per_s, *, per_instance_qps, instances_now, interval_s, cold_start_s):
    """Return {"lead_s", "qps_at_ready", "instances_needed", "warm_spares"}."""
    raise NotImplementedError
