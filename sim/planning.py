"""From a QPS target to a deployment: instances, GPUs, cost, and what limits one instance.

    p = plan(200, setup, 2000, 500, ttft_slo=2.0, tpot_slo=0.05, gpus_per_instance=8)

The per-instance rate comes from ``sim.capacity.max_rate``; ``size`` is the arithmetic after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

from sim import bound
from sim.capacity import POISSON_REQUESTS, BracketError, InfeasibleError, max_rate
from sim.capacity import search as capacity_search
from sim.metrics import percentile
from sim.result import SimResult
from sim.setup import Setup
from sim.simulate import simulate
from sim.validate import check_int, check_lengths_fit, check_number

__all__ = ["plan", "Plan", "size", "Sizing", "Uncertainty", "SEARCHES", "PLAN_REL_TOL",
           "BracketError", "InfeasibleError"]        # the errors are sim.capacity's, re-exported

SEARCHES = ("auto", "chapter")
PLAN_REL_TOL = 1e-3          # the auto search brackets the largest feasible rate to 0.1%
LOW_LOAD_REQUESTS = 300      # the chapter's low-load run: 300 requests at 1 req/s


@dataclass(frozen=True)
class Plan:
    """A deployment sized for a QPS target: instances, GPUs, cost, and what limits one instance.

    rate_per_instance              largest Poisson rate (req/s) one instance serves within the SLOs
    search                         how it was found: "auto" (``max_rate``'s search to PLAN_REL_TOL),
                                   "chapter" (the handbook's 12 halvings of [1, 60]) or "given"
    instances_no_headroom          ceil(qps / rate_per_instance)
    instances                      ceil(qps / rate_per_instance * headroom)
    gpus                           instances * gpus_per_instance
    usd_per_hour                   gpus * gpu_hour_usd
    usd_per_million_output_tokens  usd_per_hour / (qps * output_len * 3600) * 1e6
    bound                          what limits one instance at that rate (see ``sim.bound``)
    bound_shares                   the step-log shares the bound was decided from
    low_load_ttft_s, low_load_tpot_s  median TTFT / TPOT of 300 requests at min(1, rate / 10) req/s
    ceilings                       the analytic ceilings on the rate: compute, bandwidth, KV (``sim.bound``)
    uncertainty                    the validation residuals the ranges come from (None: no ranges)
    rate_range, instances_range, gpus_range
                                   rate per instance x the residuals' (low, high), and the instances
                                   (with headroom) and GPUs those rates need: (fewest, most)
    run_at_rate                    the run at ``rate_per_instance`` the bound was read from (not in
                                   ``as_dict`` or comparisons; a caller draws it instead of rerunning)

    ``resized(qps=..., gpu_hour_usd=...)`` is the same instance sized for another target or price:
    the arithmetic only, no simulation.
    """

    qps: float
    input_len: int
    output_len: int
    ttft_slo: float
    tpot_slo: float
    target: float
    gpus_per_instance: int
    headroom: float
    gpu_hour_usd: float
    search: str
    rate_per_instance: float
    instances_no_headroom: int
    instances: int
    gpus: int
    usd_per_hour: float
    usd_per_million_output_tokens: float
    bound: str
    bound_shares: dict = field(compare=False)
    low_load_ttft_s: float
    low_load_tpot_s: float
    ceilings: bound.Ceilings
    uncertainty: Uncertainty | None = None
    rate_range: tuple[float, float] | None = None
    instances_range: tuple[int, int] | None = None
    gpus_range: tuple[int, int] | None = None
    run_at_rate: SimResult | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict:
        """Every field but ``run_at_rate``, as plain Python values (JSON-serializable)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "run_at_rate"}
        out["bound_shares"] = dict(self.bound_shares)
        out["ceilings"] = self.ceilings._asdict()
        out["uncertainty"] = self.uncertainty._asdict() if self.uncertainty else None
        for key in ("rate_range", "instances_range", "gpus_range"):
            out[key] = list(out[key]) if out[key] else None
        return out

    def __str__(self) -> str:
        pct = f"p{self.target * 100:g}"
        rows = [
            ("load", f"{self.qps:g} req/s, {self.input_len} in / {self.output_len} out tokens"),
            ("SLOs", f"{pct} TTFT <= {_fmt_s(self.ttft_slo)}, {pct} TPOT <= {_fmt_s(self.tpot_slo)}"),
            ("low load", f"TTFT {_fmt_s(self.low_load_ttft_s)}, TPOT {_fmt_s(self.low_load_tpot_s)} (median)"),
            ("rate per instance", f"{self.rate_per_instance:.1f} req/s" + (
                f" ({self.rate_range[0]:.1f}-{self.rate_range[1]:.1f})" if self.rate_range else "")
                + f" ({self.search} search)"),
            ("bound", f"{self.bound} (compute-bound {self.bound_shares['compute']:.0%} of step time)"),
            ("instances", f"{self.instances_no_headroom}, {self.instances}" + (
                f" ({self.instances_range[0]}-{self.instances_range[1]})" if self.instances_range else "")
                + f" with {self.headroom:g}x headroom"),
            ("GPUs", f"{self.gpus}" + (f" ({self.gpus_range[0]}-{self.gpus_range[1]})" if self.gpus_range else "")
                     + f" ({self.gpus_per_instance} per instance)"),
            ("cost", f"${self.usd_per_hour:,.0f}/h at ${self.gpu_hour_usd:g}/GPU-h, "
                     f"${self.usd_per_million_output_tokens:.2f} per 1M output tokens"),
        ]
        if self.uncertainty:
            u = self.uncertainty
            rows.append(("ranges", f"published / predicted capacity was {u.low:.2f}-{u.high:.2f} (10th-90th "
                                   f"percentile) over {u.rows} validation rows of {u.slice}"))
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def resized(self, *, qps: float | None = None, gpu_hour_usd: float | None = None) -> Plan:
        """This plan for another QPS target or GPU price: instances, GPUs, cost and ranges recomputed
        from the same per-instance figures (what ``plan`` gives for them, without simulating)."""
        qps = self.qps if qps is None else qps
        gpu_hour_usd = self.gpu_hour_usd if gpu_hour_usd is None else gpu_hour_usd
        _check_positive("qps", qps)
        check_number("gpu_hour_usd", gpu_hour_usd, 0, strict=False)
        sized, ranges = _sizing(qps, self.rate_per_instance, self.output_len, self.gpus_per_instance,
                                self.headroom, gpu_hour_usd, self.uncertainty)
        return replace(self, qps=qps, gpu_hour_usd=gpu_hour_usd, **sized._asdict(), **ranges)


def plan(qps: float, setup: Setup, input_len: int, output_len: int, ttft_slo: float,
         tpot_slo: float, *, gpus_per_instance: int, headroom: float = 1.3,
         gpu_hour_usd: float = 2.5, rate: float | None = None, search: str = "auto",
         target: float = 0.99, num_requests: int | None = None, rel_tol: float = PLAN_REL_TOL,
         seed: int = 0, uncertainty: Uncertainty | None = None, stop=None) -> Plan:
    """Size a deployment of identical ``setup`` instances for ``qps`` requests per second.

    The rate one instance sustains comes from ``rate`` when given (``search`` is then "given"),
    else from a search on Poisson arrivals (``num_requests`` per run; None: steady-state trials,
    ``sim.capacity``'s default, or the handbook's 1500 for ``search="chapter"``), a run passing when
    at least ``target`` of its requests meet both SLOs:

    - ``search="auto"`` (default): ``max_rate(..., method="search")`` with ``rel_tol`` (default
      0.1%): no bracket to guess. For the chapter's instance it gives 16.76 req/s (printed 16.8).
    - ``search="chapter"``: ``max_rate(..., method="bisect")``, the handbook's bracket [1, 60] and
      12 halvings (16.75830078125 req/s for the chapter); raises ``BracketError`` when the answer
      is outside.

    Then instances = ceil(qps / rate * headroom), GPUs and cost follow; ``bound`` is read from the
    step log of the run at that rate (see ``sim.bound``). Raises ``InfeasibleError`` (a ValueError)
    when no rate meets the SLOs, saying which SLO a lone request already misses (checked first: a
    request alone is the best case, so then no search is run).

    ``uncertainty`` (``sim.presets.uncertainty(gpu, tp)`` for a calibrated preset) adds ranges: the
    rate times the validation residuals' 10th and 90th percentiles of published / predicted
    capacity, and the instances and GPUs those two rates need.

    ``stop``: a function of no arguments the search asks between slices of its runs; when it
    returns True, ``plan`` raises ``sim.capacity.Cancelled`` (an interactive caller whose question
    has changed: the chapter-02 panel).
    """
    _check_positive("qps", qps)
    _check_positive("ttft_slo", ttft_slo)
    _check_positive("tpot_slo", tpot_slo)
    check_int("gpus_per_instance", gpus_per_instance, 1)
    check_number("headroom", headroom, 1, strict=False, note="(1.3 = 30% spare)")
    check_number("gpu_hour_usd", gpu_hour_usd, 0, strict=False)
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {search!r}")
    check_int("input_len", input_len, 1)
    check_int("output_len", output_len, 1)
    check_lengths_fit(setup, input_len, output_len)

    lengths = (input_len, output_len)
    if rate is not None:
        _check_positive("rate", rate)
        search, at_rate = "given", None
    else:
        rate, at_rate = _search(setup, lengths, ttft_slo, tpot_slo, search, target, num_requests, seed, rel_tol,
                                stop)

    low = simulate(setup, min(1.0, rate / 10), LOW_LOAD_REQUESTS, input_len, output_len, seed)
    low_ttft, low_tpot = percentile(low.ttft, 50), percentile(low.tpot, 50)   # summarize's p50s, alone
    if at_rate is None:
        at_rate = simulate(setup, rate, num_requests or POISSON_REQUESTS, input_len, output_len, seed)
    share = bound.shares(setup, at_rate, ttft_slo=ttft_slo, tpot_slo=tpot_slo, ttft_alone=low_ttft)
    sized, ranges = _sizing(qps, rate, output_len, gpus_per_instance, headroom, gpu_hour_usd, uncertainty)
    return Plan(
        qps=qps, input_len=int(input_len), output_len=int(output_len), ttft_slo=ttft_slo,
        tpot_slo=tpot_slo, target=target, gpus_per_instance=int(gpus_per_instance),
        headroom=headroom, gpu_hour_usd=gpu_hour_usd, search=search, rate_per_instance=float(rate),
        **sized._asdict(), bound=bound.classify(share), bound_shares=share,
        low_load_ttft_s=low_ttft, low_load_tpot_s=low_tpot,
        ceilings=bound.ceilings(setup, input_len, output_len), run_at_rate=at_rate, **ranges)


def _search(setup, lengths, ttft_slo, tpot_slo, search, target, num_requests, seed, rel_tol, stop=None):
    """(the largest rate within the SLOs, the search's run at it or None), by ``search``.

    A lone request is the best case (nothing shares its steps), so when it already misses an SLO no
    rate can pass: that answers at once, with the reason, instead of searching down to zero. Not
    for TPOT with speculative decoding: acceptance is drawn per request, so others may be luckier."""
    alone = simulate(setup, 1.0, 1, *lengths)
    tpot_miss = alone.tpot[0] > tpot_slo and setup.speculative is None
    if alone.ttft[0] > ttft_slo or tpot_miss:
        raise _infeasible(alone, ttft_slo, tpot_slo, target)
    at_rate = None
    if search == "chapter":
        rate = max_rate(setup, lengths, ttft_slo, tpot_slo, method="bisect", target=target,
                        num_requests=num_requests, seed=seed, lo=1.0, hi=60.0, iterations=12, stop=stop)
    else:
        rate, runs = capacity_search(setup, *lengths, ttft_slo, tpot_slo, target=target,
                                     num_requests=num_requests, seed=seed, rel_tol=rel_tol, stop=stop)
        at_rate = runs.results.get(rate)
    if rate <= 0:
        raise _infeasible(alone, ttft_slo, tpot_slo, target)
    return rate, at_rate


def _sizing(qps, rate, output_len, gpus_per_instance, headroom, gpu_hour_usd, uncertainty):
    """``size`` at the rate, and the ranges' fields (empty without ``uncertainty``)."""
    sized = size(qps, rate, output_len, gpus_per_instance=gpus_per_instance, headroom=headroom,
                 gpu_hour_usd=gpu_hour_usd)
    if uncertainty is None:
        return sized, {}
    fast = size(qps, rate * uncertainty.high, output_len, gpus_per_instance=gpus_per_instance,
                headroom=headroom, gpu_hour_usd=gpu_hour_usd)
    slow = size(qps, rate * uncertainty.low, output_len, gpus_per_instance=gpus_per_instance,
                headroom=headroom, gpu_hour_usd=gpu_hour_usd)
    return sized, dict(uncertainty=uncertainty, rate_range=(rate * uncertainty.low, rate * uncertainty.high),
                       instances_range=(fast.instances, slow.instances), gpus_range=(fast.gpus, slow.gpus))


class Uncertainty(NamedTuple):
    """How far capacity has been off where it was checked: published / predicted throughput's 10th
    (``low``) and 90th (``high``) percentiles over ``rows`` validation rows of ``slice``."""

    low: float
    high: float
    rows: int
    slice: str


class Sizing(NamedTuple):
    """Instances, GPUs and cost for ``qps`` at a per-instance rate (see ``size``)."""

    instances_no_headroom: int
    instances: int
    gpus: int
    usd_per_hour: float
    usd_per_million_output_tokens: float


def size(qps: float, rate: float, output_len: int, *, gpus_per_instance: int, headroom: float,
         gpu_hour_usd: float) -> Sizing:
    """The arithmetic from a per-instance rate to a deployment: ceil(qps / rate) instances,
    ceil(qps / rate * headroom) with headroom, their GPUs, and cost per hour and per million
    output tokens (usd_per_hour / (qps * output_len * 3600) * 1e6)."""
    instances = math.ceil(qps / rate * headroom)
    gpus = instances * int(gpus_per_instance)
    usd_per_hour = gpus * gpu_hour_usd
    return Sizing(math.ceil(qps / rate), instances, gpus, usd_per_hour,
                  usd_per_hour / (qps * int(output_len) * 3600) * 1e6)


def _infeasible(alone, ttft_slo, tpot_slo, target) -> InfeasibleError:
    """Why no rate works, from the run of one request alone on the instance."""
    ttft, tpot = float(alone.ttft[0]), float(alone.tpot[0])
    misses = []
    if ttft > ttft_slo:
        misses.append(f"its TTFT is {_fmt_s(ttft)} > ttft_slo {_fmt_s(ttft_slo)}")
    if tpot > tpot_slo:
        misses.append(f"its TPOT is {_fmt_s(tpot)} > tpot_slo {_fmt_s(tpot_slo)}")
    if misses:
        why = "a lone request already misses the SLOs: " + " and ".join(misses)
    else:
        why = (f"a lone request meets them (TTFT {_fmt_s(ttft)}, TPOT {_fmt_s(tpot)}), but even a "
               f"trickle of requests leaves fewer than {target:.0%} within both")
    return InfeasibleError(f"no request rate meets the SLOs on this instance: {why}; "
                           "use a faster instance (more GPUs, lower precision) or looser SLOs",
                           ttft_s=ttft, tpot_s=tpot)


def _check_positive(name: str, value) -> None:
    check_number(name, value, 0)


def _fmt_s(seconds: float) -> str:
    """Seconds the way the chapter prints them: ms below one second."""
    if seconds < 1:
        ms = seconds * 1e3
        return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"
    return f"{seconds:.3g} s"
