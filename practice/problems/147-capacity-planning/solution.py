"""Reference solution for 147: capacity planning from load-test curves."""
import math
import numbers


def _number(name, value, *, minimum=None, strict=True):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {value!r}")


def max_qps_under_slo(qps, ttft_p99, tpot_p99, ttft_slo, tpot_slo):
    """Largest QPS on a measured curve whose P99 TTFT and TPOT stay within the SLO.

    Walk the points in order of QPS; at the first point that breaks an SLO, interpolate linearly
    between it and the point before for each broken metric, and take the smallest crossing.
    """
    for name, values in (("qps", qps), ("ttft_p99", ttft_p99), ("tpot_p99", tpot_p99)):
        if not isinstance(values, list):
            raise ValueError(f"{name} must be a list of numbers, got {values!r}")
    n = len(qps)
    if n == 0:
        raise ValueError("qps must not be empty")
    if len(ttft_p99) != n or len(tpot_p99) != n:
        raise ValueError("ttft_p99 and tpot_p99 must have the same length as qps")
    for i in range(n):
        _number("qps", qps[i], minimum=0)
        _number("ttft_p99", ttft_p99[i], minimum=0, strict=False)
        _number("tpot_p99", tpot_p99[i], minimum=0, strict=False)
        if i and qps[i] <= qps[i - 1]:
            raise ValueError("qps must be strictly increasing")
    _number("ttft_slo", ttft_slo, minimum=0)
    _number("tpot_slo", tpot_slo, minimum=0)
    for i in range(n):
        broken = [(m, slo) for m, slo in ((ttft_p99, ttft_slo), (tpot_p99, tpot_slo)) if m[i] > slo]
        if not broken:
            continue
        if i == 0:
            return 0.0
        crossings = []
        for metric, slo in broken:
            lo, hi = metric[i - 1], metric[i]
            crossings.append(qps[i - 1] + (slo - lo) * (qps[i] - qps[i - 1]) / (hi - lo))
        return float(min(crossings))
    return float(qps[-1])


def replicas(peak_qps, per_replica_qps, *, headroom=0.8, failures=0):
    """Replicas needed at peak: ceil(peak / (per_replica * headroom)) + failures."""
    _number("peak_qps", peak_qps, minimum=0, strict=False)
    _number("per_replica_qps", per_replica_qps, minimum=0)
    if isinstance(headroom, bool) or not isinstance(headroom, numbers.Real) or not 0 < headroom <= 1:
        raise ValueError(f"headroom must be in (0, 1], got {headroom!r}")
    if isinstance(failures, bool) or not isinstance(failures, numbers.Integral) or failures < 0:
        raise ValueError(f"failures must be an integer >= 0, got {failures!r}")
    return math.ceil(peak_qps / (per_replica_qps * headroom)) + failures


def concurrency(qps, ttft_s, tpot_s, output_len):
    """Little's law: requests in flight = qps * (ttft + (output_len - 1) * tpot)."""
    _number("qps", qps, minimum=0, strict=False)
    _number("ttft_s", ttft_s, minimum=0, strict=False)
    _number("tpot_s", tpot_s, minimum=0, strict=False)
    if isinstance(output_len, bool) or not isinstance(output_len, numbers.Integral) or output_len < 1:
        raise ValueError(f"output_len must be an integer >= 1, got {output_len!r}")
    return qps * (ttft_s + (output_len - 1) * tpot_s)
