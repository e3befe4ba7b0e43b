"""Fleet figures on top of ``summarize``: balance, utilisation, transfers, retries, GPU-hours, cost,
and SLO attainment per time window."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from sim.fleet.result import FleetResult
from sim.metrics import meets_slos, percentile, summarize


def summarize_fleet(result: FleetResult, ttft_slo: float | None = None, tpot_slo: float | None = None,
                    *, window_s: float | None = None) -> dict:
    """``summarize`` (goodput counted over the arrival window, see there) plus, per pool, load imbalance (max / mean requests per instance) and
    utilisation (busy step time / time up, mean over its instances); KV transfer percentiles (PD);
    retries, failures by reason; GPU-hours, cost and cost per million output tokens; and with
    ``window_s`` the SLO attainment of the requests arriving in each window."""
    if not isinstance(result, FleetResult):
        raise ValueError(f"result must be a FleetResult (from sim.fleet.run_fleet), got {type(result).__name__}")
    stats = summarize(result, ttft_slo, tpot_slo)
    pools = ("prefill", "decode") if result.disaggregated else ("colocated",)
    for pool in pools:
        ids = [w.id for w in result.workers if w.pool == pool and not math.isnan(w.ready_s)]
        served = result.prefill_instance if pool == "prefill" else result.instance
        counts = np.bincount(served[served >= 0], minlength=len(result.workers))[ids]
        stats[f"{pool}_instances"] = len(ids)
        stats[f"{pool}_imbalance"] = float(counts.max() / counts.mean()) if counts.sum() else 0.0
        utils = []
        for i in ids:
            w = result.workers[i]
            up = w.stopped_s - w.ready_s
            busy = float(result.instance_steps(i).duration.sum())
            utils.append(busy / up if up > 0 else 0.0)
        stats[f"{pool}_utilisation"] = float(np.mean(utils))
    if result.disaggregated:
        x = result.transfer_s[~np.isnan(result.transfer_s)]
        stats["transfer_p50"] = percentile(x, 50) if len(x) else None
        stats["transfer_p99"] = percentile(x, 99) if len(x) else None
    parts = [r for r in result.instance_results if r.preemptions is not None]
    if parts:                                   # memory features: totals over the instances
        looked = sum(int(r.prompt_tokens.sum()) for r in parts)
        cached = sum(int(r.cached_tokens.sum()) for r in parts)
        stats["preemptions"] = sum(int(r.preemptions.sum()) for r in parts)
        stats["prefix_hit_rate"] = cached / looked if looked else 0.0
        stats["host_hit_rate"] = sum(int(r.host_tokens.sum()) for r in parts) / looked if looked else 0.0
    stats["retries"] = int(result.retries.sum())
    stats["errors"] = dict(Counter(e for e in result.error.tolist() if e is not None))
    stats["instances_peak"] = max(up for _, up, _ in result.timeline)
    stats["gpu_hours"] = result.gpu_hours
    stats["cost_usd"] = result.cost_usd
    out_tokens = int(result.output_len[~result.failed].sum())
    stats["usd_per_million_output_tokens"] = result.cost_usd / out_tokens * 1e6 if out_tokens else math.inf
    if window_s is not None:
        stats["slo_by_window"] = slo_by_window(result, ttft_slo, tpot_slo, window_s)
    return stats


def slo_by_window(result, ttft_slo, tpot_slo, window_s: float) -> list[tuple[float, int, float]]:
    """(window start, requests arriving in it, fraction meeting both SLOs) per ``window_s``
    window of arrival time; failed requests count as misses."""
    if not (isinstance(window_s, (int, float)) and window_s > 0 and math.isfinite(window_s)):
        raise ValueError(f"window_s must be a finite number > 0 (seconds), got {window_s!r}")
    ttft = math.inf if ttft_slo is None else ttft_slo
    tpot = math.inf if tpot_slo is None else tpot_slo
    ok = meets_slos(result, ttft, tpot) & ~np.isnan(result.finish)
    window = np.floor(result.arrival / window_s).astype(np.int64)
    total = np.bincount(window)
    good = np.bincount(window, weights=ok.astype(float), minlength=len(total))
    return [(k * window_s, int(total[k]), float(good[k] / total[k])) for k in range(len(total)) if total[k]]
