"""The fleet question: for a load and SLOs, the cheapest fleet, colocated or disaggregated,
verified by simulating it.

Colocated: start from qps / (one instance's largest rate within the SLOs), then simulate fleets of
that size behind the router and step down (or up) to the smallest that meets the SLOs.
Disaggregated (PD): prefill instances first, from the prompt FLOPs per second an instance computes,
raised until the fleet meets the TTFT SLO (decode never changes TTFT); then the fewest decode
instances that bring the whole fleet within both SLOs (a bisection). Every candidate is a simulated
fleet on ``duration_s`` seconds of Poisson arrivals, passing when at least ``target`` of its
requests meet both SLOs and it keeps up with the load (``keeps_up``: a queue that grows for the
whole window would miss the SLOs in a longer run).

The one link to the single-instance planner is ``single_instance_rate`` (``sim.plan``'s rate).
``python -m sim fleet`` (in ``sim.cli``) prints ``size_fleet``'s answer.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from sim.fleet.clock import run_fleet
from sim.fleet.spec import Fleet
from sim.metrics import meets_slos, percentile
from sim.planning import InfeasibleError, plan
from sim.setup import Setup
from sim.validate import check_int, check_number
from sim.workload import poisson


def single_instance_rate(setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float,
                         target: float = 0.99) -> float:
    """The largest Poisson rate one instance serves within the SLOs (req/s): ``sim.plan``'s (the same
    search, so ``python -m sim fleet`` and ``plan`` quote the same rate); 0.0 when none does."""
    try:
        return plan(1.0, setup, input_len, output_len, ttft_slo, tpot_slo, gpus_per_instance=1,
                    target=target).rate_per_instance
    except InfeasibleError:
        return 0.0


KEEP_UP = 0.97
DRIFT, DRIFT_S = 1.25, 0.05     # allowed growth of the median wait between the 2nd and 4th quarters


def keeps_up(done_at, arrival) -> bool:
    """Whether a fleet keeps up with the load (``done_at``: each request's finish, or first token).

    An overloaded fleet can still meet the SLOs over a short window while its queue grows.
    Require both that in the window's second half it completes as many requests as arrive
    (within KEEP_UP, about two standard deviations of the Poisson count), and that waiting
    does not grow: the median time to ``done_at`` of the last quarter's arrivals is at most
    DRIFT x the second quarter's plus DRIFT_S (a stable queue has the same distribution in
    both; a slowly overloaded one, which a short window hides, drifts upwards)."""
    done_at, arrival = np.asarray(done_at, dtype=float), np.asarray(arrival, dtype=float)
    end = arrival[-1]
    arrived = int((arrival >= end / 2).sum())
    completed = int(((done_at >= end / 2) & (done_at <= end)).sum())
    if completed < KEEP_UP * arrived:
        return False
    wait = done_at - arrival
    second = wait[(arrival >= end / 4) & (arrival < end / 2)]
    last = wait[arrival >= 3 * end / 4]
    if not len(second) or not len(last):
        return True
    return float(np.median(last)) <= DRIFT * float(np.median(second)) + DRIFT_S


# --- the search ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FleetOption:
    """One verified fleet: its shape, cost and the simulated figures that verified it."""

    kind: str                 # "colocated" or "disaggregated"
    instances: int
    prefill: int              # PD: prefill instances (0 when colocated)
    decode: int               # PD: decode instances (0 when colocated)
    gpus: int
    usd_per_hour: float
    slo_ok: float
    ttft_p99: float
    tpot_p99: float
    simulations: int          # fleets simulated to find it

    def __str__(self) -> str:
        shape = (f"{self.instances} instances" if self.kind == "colocated"
                 else f"{self.prefill} prefill + {self.decode} decode = {self.instances} instances")
        return (f"{self.kind:<13} {shape}, {self.gpus} GPUs, ${self.usd_per_hour:,.0f}/h; simulated: "
                f"{self.slo_ok:.1%} within SLOs, p99 TTFT {self.ttft_p99 * 1e3:.0f} ms, "
                f"p99 TPOT {self.tpot_p99 * 1e3:.1f} ms")


@dataclass(frozen=True)
class FleetPlan:
    qps: float
    input_len: int
    output_len: int
    ttft_slo: float
    tpot_slo: float
    rate_per_instance: float
    colocated: FleetOption | None
    disaggregated: FleetOption | None

    @property
    def best(self) -> FleetOption | None:
        options = [o for o in (self.colocated, self.disaggregated) if o is not None]
        return min(options, key=lambda o: (o.usd_per_hour, o.kind != "colocated"), default=None)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["best"] = self.best.kind if self.best else None
        return out

    def __str__(self) -> str:
        lines = [f"load       {self.qps:g} req/s, {self.input_len} in / {self.output_len} out tokens; "
                 f"SLOs p99 TTFT <= {self.ttft_slo:g} s, p99 TPOT <= {self.tpot_slo * 1e3:g} ms",
                 f"one instance within the SLOs: {self.rate_per_instance:.1f} req/s"]
        for o in (self.colocated, self.disaggregated):
            lines.append(str(o) if o is not None else "(no fleet found within the limits)")
        if self.best:
            lines.append(f"cheapest   {self.best.kind}")
        return "\n".join(lines)


def size_fleet(qps: float, setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float,
               *, gpus_per_instance: int = 1, gpu_hour_usd: float = 2.5, target: float = 0.99,
               duration_s: float = 120.0, router: str = "least_requests", link_gbs: float = 50.0,
               link_latency_s: float = 1e-3, decode_setup: Setup | None = None, disaggregated: bool = True,
               max_instances: int = 256, seed: int = 0, progress=None) -> FleetPlan:
    """The cheapest colocated fleet and the cheapest PD fleet for ``qps`` (see the module doc).

    ``progress(done, None)`` is called after each simulated fleet (``sim.progress``; the number of
    fleets to try is not known in advance)."""
    check_number("qps", qps, 0, note="(requests per second)")
    check_number("duration_s", duration_s, 0, note="(seconds)")
    check_int("max_instances", max_instances, 2)
    load = poisson(qps, max(1, round(qps * duration_s)), input_len, output_len, seed=seed)
    trial = _Trials(load, ttft_slo, tpot_slo, gpus_per_instance, gpu_hour_usd, progress)
    rate = single_instance_rate(setup, input_len, output_len, ttft_slo, tpot_slo, target)
    colocated = None
    if rate > 0:
        common = dict(router=router, gpus_per_instance=gpus_per_instance, seed=seed, log_routes=False)
        start = min(max_instances, math.ceil(qps / rate))
        colocated = _fewest_colocated(lambda k: Fleet.of(setup, k, **common), start, max_instances, trial, target)
    pd = None
    if disaggregated:
        ceiling = max(2, math.ceil(qps / rate) + 2) if rate > 0 else max_instances
        common = dict(router=router, gpus_per_instance=gpus_per_instance, seed=seed, link_gbs=link_gbs,
                      link_latency_s=link_latency_s, log_routes=False)
        dsetup = decode_setup or setup
        prompt_tps = setup.peak_flops * setup.mfu / (2 * setup.params)
        first = max(1, math.ceil(qps * input_len / prompt_tps))
        pd = _cheapest_pd(lambda p, d: Fleet.pd(setup, p, dsetup, d, **common), first, ceiling, max_instances,
                          trial, target)
    return FleetPlan(qps, int(input_len), int(output_len), ttft_slo, tpot_slo, rate, colocated, pd)


class _Trials:
    """Simulates candidate fleets on the one load, counting them (``simulations``) for each search."""

    def __init__(self, load, ttft_slo, tpot_slo, gpus_per_instance, gpu_hour_usd, progress):
        self.load, self.ttft_slo, self.tpot_slo = load, ttft_slo, tpot_slo
        self.gpus_per_instance, self.gpu_hour_usd, self.progress = gpus_per_instance, gpu_hour_usd, progress
        self.simulations = self.total = 0

    def __call__(self, fleet: Fleet):
        """(fraction within both SLOs, or 0 if the fleet falls behind; the same for TTFT; result)."""
        self.simulations += 1
        self.total += 1
        res = run_fleet(fleet, self.load)
        if self.progress:
            self.progress(self.total, None)
        slo_ok = (float(meets_slos(res, self.ttft_slo, self.tpot_slo).mean())
                  if keeps_up(res.finish, res.arrival) else 0.0)
        ttft_ok = float((res.ttft <= self.ttft_slo).mean()) if keeps_up(res.first_token, res.arrival) else 0.0
        return slo_ok, ttft_ok, res

    def option(self, kind, prefill, decode, res, slo_ok) -> FleetOption:
        total = prefill + decode
        gpus = total * self.gpus_per_instance
        return FleetOption(kind, total, prefill if kind != "colocated" else 0, decode if kind != "colocated" else 0,
                           gpus, gpus * self.gpu_hour_usd, slo_ok, percentile(res.ttft, 99),
                           percentile(res.tpot, 99), self.simulations)


def _fewest_colocated(make, start: int, max_instances: int, trial: _Trials, target: float):
    """From ``start`` instances, step down while the fleet passes (up while it fails) to the fewest
    that pass; None when even ``max_instances`` fail."""
    trial.simulations = 0
    found = {}
    k = start
    while 1 <= k <= max_instances:
        slo_ok, _, res = trial(make(k))
        found[k] = (slo_ok >= target, res, slo_ok)
        if found[k][0]:
            if k - 1 in found or k == 1:
                break
            k -= 1
        else:
            if k + 1 in found:
                k += 1
                break
            k += 1
    best = min((k for k, v in found.items() if v[0]), default=None)
    if best is None:
        return None
    return trial.option("colocated", best, 0, found[best][1], found[best][2])


def _cheapest_pd(make, first: int, ceiling: int, max_instances: int, trial: _Trials, target: float):
    """Prefill instances from ``first`` up until the TTFT SLO holds (with ``ceiling`` decode ones),
    then the fewest decode instances that bring the fleet within both SLOs (a bisection)."""
    trial.simulations = 0
    p = first
    while p < max_instances:
        _, ttft_ok, _ = trial(make(p, ceiling))
        if ttft_ok >= target:
            break
        p += 1
    lo, hi, best = 1, ceiling, None
    while lo <= hi:
        d = (lo + hi) // 2
        slo_ok, _, res = trial(make(p, d))
        if slo_ok >= target:
            best, hi = (d, res, slo_ok), d - 1
        else:
            lo = d + 1
    if best is None:
        return None
    d, res, slo_ok = best
    return trial.option("disaggregated", p, d, res, slo_ok)
