"""178. 估算：滚动更新要多久。

Write the two functions below; see problem.md for the rules, units and the worked example.
Judge with:  python practice/judge.py 178
"""
import math


def max_unavailable(instances, qps, per_instance_qps):
    """instances - ceil(qps / per_instance_qps); ValueError (naming qps) when that is negative."""
    raise NotImplementedError


def plan_update(instances, qps, per_instance_qps, *, weight_bytes, source, drain_s, init_s=0.0,
                max_surge=0, shared_gbs=None):
    """Return {"max_unavailable", "per_wave", "waves", "wave_s", "duration_s", "peak_instances"}."""
    raise NotImplementedError
