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

The only links to the single-instance planner are the two adapter functions below.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from sim.fleet.clock import run_fleet
from sim.fleet.spec import Fleet
from sim.metrics import meets_slos
from sim.setup import Setup
from sim.validate import check_int, check_number
from sim.workload import poisson


# --- adapters to the single-instance planner ------------------------------------------------------

def single_instance_rate(setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float,
                         target: float = 0.99) -> float:
    """The largest Poisson rate one instance serves within the SLOs (req/s)."""
    from sim.capacity import max_rate
    return max_rate(setup, (input_len, output_len), ttft_slo, tpot_slo, target=target)


def gpu_hour_usd(gpu: str) -> float:
    """The price list the planner uses, per GPU-hour."""
    from sim import presets
    from sim.sweep import GPU_HOUR_USD
    return GPU_HOUR_USD[presets._resolve("gpu", gpu, presets.GPUS)]


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
               max_instances: int = 256, seed: int = 0) -> FleetPlan:
    """The cheapest colocated fleet and the cheapest PD fleet for ``qps`` (see the module doc)."""
    check_number("qps", qps, 0, note="(requests per second)")
    check_number("duration_s", duration_s, 0, note="(seconds)")
    check_int("max_instances", max_instances, 2)
    n = max(1, round(qps * duration_s))
    load = poisson(qps, n, input_len, output_len, seed=seed)
    sims = [0]

    def check(fleet: Fleet):
        """(fraction within both SLOs, or 0 if the fleet falls behind; the same for TTFT; result)."""
        sims[0] += 1
        res = run_fleet(fleet, load)
        slo_ok = float(meets_slos(res, ttft_slo, tpot_slo).mean()) if keeps_up(res.finish, res.arrival) else 0.0
        ttft_ok = float((res.ttft <= ttft_slo).mean()) if keeps_up(res.first_token, res.arrival) else 0.0
        return slo_ok, ttft_ok, res

    def option(kind, p, d, total, res, slo_ok):
        from sim.metrics import percentile
        return FleetOption(kind, total, p, d, total * gpus_per_instance, total * gpus_per_instance * gpu_hour_usd,
                           slo_ok, percentile(res.ttft, 99), percentile(res.tpot, 99), sims[0])

    rate = single_instance_rate(setup, input_len, output_len, ttft_slo, tpot_slo, target)
    colocated = None
    if rate > 0:
        common = dict(router=router, gpus_per_instance=gpus_per_instance, seed=seed, log_routes=False)
        size = min(max_instances, math.ceil(qps / rate))
        found = {}
        k = size
        while 1 <= k <= max_instances:
            slo_ok, _, res = check(Fleet.of(setup, k, **common))
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
        if best is not None:
            colocated = option("colocated", 0, 0, best, found[best][1], found[best][2])

    pd = None
    if disaggregated:
        sims[0] = 0
        dsetup = decode_setup or setup
        ceiling = max(2, math.ceil(qps / rate) + 2) if rate > 0 else max_instances
        pd_common = dict(router=router, gpus_per_instance=gpus_per_instance, seed=seed, link_gbs=link_gbs,
                         link_latency_s=link_latency_s, log_routes=False)
        prompt_tps = setup.peak_flops * setup.mfu / (2 * setup.params)
        p = max(1, math.ceil(qps * input_len / prompt_tps))
        while p < max_instances:
            _, ttft_ok, _ = check(Fleet.pd(setup, p, dsetup, ceiling, **pd_common))
            if ttft_ok >= target:
                break
            p += 1
        lo, hi, best = 1, ceiling, None
        while lo <= hi:                    # the fewest decode instances that meet both SLOs
            d = (lo + hi) // 2
            slo_ok, _, res = check(Fleet.pd(setup, p, dsetup, d, **pd_common))
            if slo_ok >= target:
                best, hi = (d, res, slo_ok), d - 1
            else:
                lo = d + 1
        if best is not None:
            d, res, slo_ok = best
            pd = option("disaggregated", p, d, p + d, res, slo_ok)
    return FleetPlan(qps, int(input_len), int(output_len), ttft_slo, tpot_slo, rate, colocated, pd)


# --- python -m sim fleet ---------------------------------------------------------------------------

def add_cli(sub, common) -> None:
    """Register ``python -m sim fleet`` on the CLI's subparsers (``common`` adds the shared flags)."""
    p = sub.add_parser("fleet", help="cheapest colocated and PD fleets, verified by simulation")
    common(p)
    p.add_argument("--gpu", required=True, help="GPU name (see sim.presets)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs per instance")
    p.add_argument("--dtype", default="bf16", help="weight dtype")
    p.add_argument("--kv-dtype", default=None, help="KV dtype (default: --dtype)")
    p.add_argument("--mfu", type=float, default=None)
    p.add_argument("--step-overhead", type=float, default=None)
    p.add_argument("--bandwidth-util", type=float, default=None)
    p.add_argument("--router", default="least_requests")
    p.add_argument("--duration", type=float, default=120.0, help="seconds of traffic per simulated fleet")
    p.add_argument("--link-gbs", type=float, default=50.0, help="KV link, GB/s (PD)")
    p.add_argument("--link-latency", type=float, default=1e-3, help="KV link latency, seconds (PD)")
    p.add_argument("--gpu-hour-usd", type=float, default=None)
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    import json

    from sim import presets
    options = {k: v for k, v in (("mfu", args.mfu), ("step_overhead", args.step_overhead),
                                 ("bandwidth_util", args.bandwidth_util)) if v is not None}
    setup = presets.instance(args.model, args.gpu, tp=args.tp, weight_dtype=args.dtype,
                             kv_dtype=args.kv_dtype, profile=getattr(args, "profile", None), **options)
    price = args.gpu_hour_usd if args.gpu_hour_usd is not None else gpu_hour_usd(args.gpu)
    result = size_fleet(args.qps, setup, args.input, args.output, args.ttft, args.tpot, gpus_per_instance=args.tp,
                        gpu_hour_usd=price, duration_s=args.duration, router=args.router,
                        link_gbs=args.link_gbs, link_latency_s=args.link_latency)
    if args.json:
        print(json.dumps({"model": args.model, "gpu": args.gpu, "tp": args.tp, "dtype": args.dtype,
                          **result.as_dict()}, indent=2))
    else:
        print(f"{args.model} on {args.tp} x {args.gpu} ({args.dtype}), router {args.router}, "
              f"{args.duration:g} s of traffic per fleet")
        print(result)
    return 0
