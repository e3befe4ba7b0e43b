"""Reference solution for 126: latency metrics (TTFT, TPOT, ITL, percentiles, goodput)."""
import math
import numbers


def _time(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")


def request_metrics(arrival, token_times):
    """TTFT, TPOT and the inter-token latencies of one request (all in seconds)."""
    _time("arrival", arrival)
    if not isinstance(token_times, (list, tuple)) or len(token_times) == 0:
        raise ValueError("token_times must be a non-empty list of times")
    for t in token_times:
        _time("token_times", t)
    if token_times[0] < arrival:
        raise ValueError("token_times: the first token comes before arrival")
    itl = [b - a for a, b in zip(token_times, token_times[1:])]
    if any(gap < 0 for gap in itl):
        raise ValueError("token_times must be non-decreasing")
    n = len(token_times)
    first, finish = token_times[0], token_times[-1]
    tpot = (finish - first) / (n - 1) if n > 1 else 0.0
    return {"ttft": first - arrival, "tpot": tpot, "itl": itl}


def percentile(values, p):
    """Nearest-rank percentile: float(sorted(values)[ceil(p*n/100) - 1]) (at least the first)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 < p <= 100:
        raise ValueError(f"p must be in (0, 100], got {p!r}")
    if not isinstance(values, (list, tuple)) or len(values) == 0:
        raise ValueError("values must be a non-empty list of numbers")
    for v in values:
        _time("values", v)
    ordered = sorted(values)
    n = len(ordered)
    rank = math.ceil(p * n / 100)
    return float(ordered[max(rank, 1) - 1])


def summarize(requests, ttft_slo, tpot_slo, p=99):
    """Percentiles of TTFT, TPOT and ITL, and goodput, over a list of requests."""
    if not isinstance(requests, list) or len(requests) == 0:
        raise ValueError("requests must be a non-empty list")
    for r in requests:
        if not isinstance(r, dict) or "arrival" not in r or "token_times" not in r:
            raise ValueError("requests: every request is a dict with 'arrival' and 'token_times'")
    for name, slo in (("ttft_slo", ttft_slo), ("tpot_slo", tpot_slo)):
        if isinstance(slo, bool) or not isinstance(slo, numbers.Real) or not math.isfinite(slo) \
                or not slo > 0:
            raise ValueError(f"{name} must be a finite number > 0 seconds, got {slo!r}")
    metrics = [request_metrics(r["arrival"], r["token_times"]) for r in requests]
    ttfts = [m["ttft"] for m in metrics]
    tpots = [m["tpot"] for m in metrics]
    gaps = [g for m in metrics for g in m["itl"]]
    start = min(r["arrival"] for r in requests)
    end = max(r["token_times"][-1] for r in requests)
    duration = end - start
    if duration <= 0:
        raise ValueError("requests: the last finish must come after the first arrival")
    good = sum(1 for m in metrics if m["ttft"] <= ttft_slo and m["tpot"] <= tpot_slo)
    return {
        "ttft_p": percentile(ttfts, p),
        "tpot_p": percentile(tpots, p),
        "itl_p": percentile(gaps, p) if gaps else 0.0,
        "slo_ok": good / len(requests),
        "goodput": good / duration,
    }
