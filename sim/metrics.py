"""Latency metrics of a finished run: TTFT, TPOT, ITL percentiles, throughput and goodput."""

from __future__ import annotations

import math

import numpy as np

from sim.result import SimResult
from sim.validate import check_number


def percentile(values, p: float, weights=None) -> float:
    """Nearest-rank percentile: the sorted values' element at ``min(n-1, ceil(p/100*n)-1)``.

    The rank is computed as ``ceil(p * n / 100)``: the same number, without the float artifact of
    ``p / 100 * n`` (99.9 / 100 * 1000 is 999.0000000000001, whose ceiling would skip a rank).

    With integer ``weights`` each value counts that many times (as if repeated), without
    building the repeated array. ``p`` is in (0, 100].
    """
    return percentiles(values, (p,), weights)[0]


def percentiles(values, ps, weights=None) -> list[float]:
    """``[percentile(values, p, weights) for p in ps]``, sorting once."""
    for p in ps:
        if not 0 < p <= 100:
            raise ValueError(f"percentile p must be in (0, 100], got {p!r}")
    values = np.asarray(values, dtype=float)
    if weights is None:
        n = len(values)
        if n == 0:
            raise ValueError("percentile of no values")
        values = np.sort(values)
        return [float(values[min(n - 1, math.ceil(p * n / 100) - 1)]) for p in ps]
    weights = np.asarray(weights, dtype=np.int64)
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    n = int(weights.sum())
    if n == 0:
        raise ValueError("percentile of no values")
    # Equal values are interchangeable: the value found does not depend on the sort's stability.
    order = np.argsort(values)
    values, cumulative = values[order], np.cumsum(weights[order])
    return [float(values[np.searchsorted(cumulative, min(n - 1, math.ceil(p * n / 100) - 1), side="right")])
            for p in ps]       # min(...): the 0-based index in the repeated list


def meets_slos(result: SimResult, ttft_slo: float, tpot_slo: float) -> np.ndarray:
    """Per request: whether its TTFT and its TPOT are both within the SLOs (inclusive)."""
    return (result.ttft <= ttft_slo) & (result.tpot <= tpot_slo)


def summarize(result: SimResult, ttft_slo: float | None, tpot_slo: float | None) -> dict:
    """Summarize a run against SLOs on TTFT and TPOT (seconds).

    TTFT = first_token - arrival; TPOT = (finish - first_token) / (output_len - 1), and 0.0 for a
    request with a single output token (it has no gaps between tokens, so it meets any TPOT SLO).
    ITL is every gap between two consecutive output tokens of a request, over all requests (a
    decoding request emits one token per step, so each gap is one step's duration; a fleet result
    adds the gaps a KV transfer opens, see ``FleetResult.itl_samples``); it is None
    for a result without a step log (one built by hand from arrays).
    Percentiles are nearest-rank. duration = last finish - first arrival; request_rate and
    output_tps = finished requests and output tokens / duration (throughput, drain included).
    goodput = requests meeting both SLOs (<=) per second of the arrival window (last arrival -
    first arrival, ``arrival_window_s``), and goodput_tps the same for their output tokens: the
    rate of good service while load arrives, so a layout that drains its backlog slowly after the
    arrivals stop is not credited (or penalised) for the drain. A run whose requests all arrive at
    once (an offline batch, or one request) has no arrival window; its goodput is then per second
    of duration. slo_ok = the fraction meeting both SLOs. An SLO of None or ``math.inf`` means
    "no SLO" (throughput-only questions).

    A fleet result whose requests can fail (``result.failed``, with a reason in ``result.error``)
    is summarized over its finished requests; failed ones count as missing the SLOs, and
    ``failed`` gives their number.
    """
    ttft_slo = _slo("ttft_slo", ttft_slo)
    tpot_slo = _slo("tpot_slo", tpot_slo)
    if len(result) == 0:
        raise ValueError("result has no requests to summarize")
    failed = getattr(result, "failed", None)
    everything = result
    if failed is not None and failed.any():
        if failed.all():
            raise ValueError("every request failed: nothing to summarize")
        result = _Subset(result, ~failed)
    ttft, tpot = result.ttft, result.tpot
    if np.isnan(result.finish).any():
        raise ValueError("result has unfinished requests (finish is NaN)")
    duration = float(result.finish.max() - everything.arrival.min())
    window = float(everything.arrival.max() - everything.arrival.min())
    per_s = window if window > 0 else duration          # an offline batch: per second of its makespan
    ok = meets_slos(result, ttft_slo, tpot_slo)
    ttft_p, tpot_p, e2e_p = percentiles(ttft, (50, 90, 99)), percentiles(tpot, (50, 90, 99)), \
        percentiles(result.e2e, (50, 99))
    stats = {
        "requests": len(result),
        "duration_s": duration,
        "ttft_mean": float(ttft.mean()),
        "ttft_p50": ttft_p[0],
        "ttft_p90": ttft_p[1],
        "ttft_p99": ttft_p[2],
        "tpot_mean": float(tpot.mean()),
        "tpot_p50": tpot_p[0],
        "tpot_p90": tpot_p[1],
        "tpot_p99": tpot_p[2],
        "e2e_p50": e2e_p[0],
        "e2e_p99": e2e_p[1],
        "request_rate": len(result) / duration,
        "output_tps": float(result.output_len.sum()) / duration,
        "arrival_window_s": window,
        "goodput": int(ok.sum()) / per_s,
        "goodput_tps": float(result.output_len[ok].sum()) / per_s,
        "slo_ok": int(ok.sum()) / len(everything),
    }
    if failed is not None:
        stats["failed"] = int(failed.sum())
    stats.update(memory_stats(everything))
    if not result.has_steps:
        stats["itl_p50"] = stats["itl_p99"] = None           # a result built by hand has no steps
    elif int((result.output_len - 1).sum()) > 0:
        gaps, counts = result.itl_samples()
        stats["itl_p50"], stats["itl_p99"] = percentiles(gaps, (50, 99), weights=counts)
    else:
        stats["itl_p50"] = stats["itl_p99"] = 0.0            # no request has a second token
    return stats


def memory_stats(result) -> dict:
    """The memory features' figures, for a result that has them (``{}`` otherwise).

    preemptions         preemptions in the run (a request may count several), and
    preempted_share     the fraction of requests preempted at least once;
    prefix_hit_rate     prompt tokens served by the prefix cache / prompt tokens looked up (a
                        recomputed request's prompt is looked up again), and
    cached_share        prompt tokens served by the cache / all requests' input tokens;
    gpu_hit_rate, host_hit_rate   the hit rate per tier (they sum to prefix_hit_rate);
    spec_tokens_per_step  output tokens after the first / decode steps, and
    spec_acceptance     accepted drafts / proposed drafts (1 + accepted tokens per step, the last
                        step of a request capped at what it still needed).
    """
    stats = {}
    pre = getattr(result, "preemptions", None)
    if pre is not None:
        stats["preemptions"] = int(pre.sum())
        stats["preempted_share"] = float((pre > 0).mean())
        looked = int(result.prompt_tokens.sum())
        cached = int(result.cached_tokens.sum())
        stats["prefix_hit_rate"] = cached / looked if looked else 0.0
        stats["cached_share"] = cached / int(result.input_len.sum())
        host = int(result.host_tokens.sum())
        stats["gpu_hit_rate"] = (cached - host) / looked if looked else 0.0
        stats["host_hit_rate"] = host / looked if looked else 0.0
    steps = getattr(result, "spec_steps", None)
    if steps is not None and steps.sum() > 0:
        k = result.spec_k
        emitted = int((result.output_len - 1).sum() - (result.output_len[steps == 0] - 1).sum())
        n = int(steps.sum())
        stats["spec_tokens_per_step"] = emitted / n
        stats["spec_acceptance"] = (emitted - n) / (k * n)
    return stats


def _slo(name: str, value) -> float:
    if value is None or (isinstance(value, float) and value == math.inf):
        return math.inf
    check_number(name, value, 0, note="(seconds; None or math.inf for no SLO)")
    return value


class _Subset:
    """The finished requests of a result, with the same properties ``summarize`` reads."""

    def __init__(self, result, keep):
        self.arrival, self.first_token, self.finish = result.arrival[keep], result.first_token[keep], result.finish[keep]
        self.input_len, self.output_len = result.input_len[keep], result.output_len[keep]
        self._result = result

    def __len__(self):
        return len(self.arrival)

    ttft = SimResult.ttft
    tpot = SimResult.tpot
    e2e = SimResult.e2e

    @property
    def has_steps(self):
        return self._result.has_steps

    @property
    def steps(self):
        return self._result.steps

    def itl_samples(self):
        return self._result.itl_samples()
