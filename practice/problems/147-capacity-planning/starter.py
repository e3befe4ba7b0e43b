"""147. 容量规划：从压测曲线到副本数。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 147
"""
import math


def max_qps_under_slo(qps, ttft_p99, tpot_p99, ttft_slo, tpot_slo):
    """Largest QPS whose P99 TTFT and TPOT meet the SLO (linear interpolation at the crossing)."""
    raise NotImplementedError


def replicas(peak_qps, per_replica_qps, *, headroom=0.8, failures=0):
    """ceil(peak_qps / (per_replica_qps * headroom)) + failures."""
    raise NotImplementedError


def concurrency(qps, ttft_s, tpot_s, output_len):
    """Little's law: qps * (ttft_s + (output_len - 1) * tpot_s)."""
    raise NotImplementedError
