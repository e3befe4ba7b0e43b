"""Fleet speed: the chapter's 200 QPS (2000 in / 500 out) for one hour on 16 colocated instances
behind least_requests, power_of_two and round_robin, the same requests on a PD fleet, and each
colocated fleet's time against the same requests run as 16 independent single-instance runs (the
requests each instance got, replayed through ``sim.run``), measured in this run.

    python benchmarks/bench_fleet.py              # one hour: 720,000 requests
    python benchmarks/bench_fleet.py --minutes 5  # shorter
    python benchmarks/bench_fleet.py --python     # also the Python fleet, and whether it agrees

These colocated fleets run in the compiled fleet (sim/fleet/fast.py): one compiled loop over the
arrivals routes each request and advances the instances the router reads with the engine's own
compiled step rule, skipping an instance whose ``quiet_until`` bound says nothing it reports can
have changed. least_requests reads all sixteen instances per arrival, power_of_two two, round_robin
none. The Python fleet (``--python``; and everything the compiled fleet does not take: PD,
failures, autoscaling, other routers) pays a Python attribute read per instance read and an
``Instance.advance`` call from Python about once per step. Times are the process's CPU seconds
(``time.process_time``: the runs are single-threaded, so on an idle machine they equal the wall
time, and on a shared one they do not count the time other processes took).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from sim import engine, presets, run, workload  # noqa: E402
from sim.fleet import Fleet, fast, run_fleet, summarize_fleet  # noqa: E402
from sim.workload import Workload  # noqa: E402


def independent_runs(setup, result, instances: int) -> tuple[float, bool]:
    """Seconds to run each instance's requests alone through the single-instance engine, and
    whether every per-request finish equals the fleet's."""
    t0 = time.process_time()
    same = True
    for i in range(instances):
        mine = np.flatnonzero(result.instance == i)
        w = Workload("replay", tuple(result.arrival[mine].tolist()), tuple(result.input_len[mine].tolist()),
                     tuple(result.output_len[mine].tolist()))
        same &= bool(np.array_equal(run(setup, w).finish, result.finish[mine]))
    return time.process_time() - t0, same


def python_fleet(setup, load, router: str, co, t_single: float) -> None:
    """The same fleet on the Python fleet (the compiled one switched off): its time, and whether
    every request's instance, first token and finish equal the compiled fleet's
    (tests/test_fleet_fast.py checks every field of the result)."""
    fast.use_fast(False)
    t0 = time.process_time()
    res = run_fleet(Fleet.of(setup, 16, router=router, gpus_per_instance=8), load)
    t_py = time.process_time() - t0
    fast.use_fast("auto")
    same = all(np.array_equal(getattr(res, name), getattr(co, name))
               for name in ("instance", "first_token", "finish"))
    print(f"    the Python fleet: {t_py:.1f} s (fleet / independent = {t_py / t_single:.1f}x); "
          f"identical per-request times and instances: {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--prefill", type=int, default=10)     # what `python -m sim fleet` picks for this load
    ap.add_argument("--decode", type=int, default=3)
    ap.add_argument("--python", action="store_true", help="also run the Python fleet and compare")
    args = ap.parse_args()
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8",
                             mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)
    n = int(200 * 60 * args.minutes)
    t0 = time.process_time()
    load = workload.poisson(200, n, 2000, 500)
    print(f"{n:,} requests at 200 req/s ({args.minutes:g} min), 2000 in / 500 out; workload built in "
          f"{time.process_time() - t0:.1f} s")
    # Start-up apart (once per process, whatever the run's size): the engine's compiled loops and
    # the compiled fleet's (numba's cache warm; the first run on a machine compiles them).
    t0 = time.process_time()
    engine.compiled()
    run(setup, workload.poisson(200, 100, 2000, 500))
    fast.use_fast(True)
    run_fleet(Fleet.of(setup, 16, router="least_requests"), workload.poisson(200, 100, 2000, 500))
    fast.use_fast("auto")
    print(f"start-up (numba and the compiled loops loaded, first runs): {time.process_time() - t0:.1f} s")

    for router in ("least_requests", "power_of_two", "round_robin"):
        t0 = time.process_time()
        co = run_fleet(Fleet.of(setup, 16, router=router, gpus_per_instance=8), load)
        t_co = time.process_time() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        memory = f", peak memory {rss:,.0f} MB" if router == "least_requests" else ""   # (a high-water mark)
        s = summarize_fleet(co, 2.0, 0.05)
        t_single, same = independent_runs(setup, co, 16)
        print(f"colocated 16 x TP8, {router}: {t_co:.1f} s{memory}; "
              f"p99 TTFT {s['ttft_p99'] * 1e3:.0f} ms, p99 TPOT {s['tpot_p99'] * 1e3:.1f} ms, "
              f"slo_ok {s['slo_ok']:.4f}, imbalance {s['colocated_imbalance']:.3f}, ${s['cost_usd']:,.0f}\n"
              f"    the same requests as 16 independent single-instance runs: {t_single:.2f} s "
              f"(fleet / independent = {t_co / t_single:.1f}x); identical per-request times: {same}")
        if args.python:
            python_fleet(setup, load, router, co, t_single)
        del co

    t0 = time.process_time()
    pd = run_fleet(Fleet.pd(setup, args.prefill, setup, args.decode, router="least_requests",
                            gpus_per_instance=8), load)
    t_pd = time.process_time() - t0
    s = summarize_fleet(pd, 2.0, 0.05)
    print(f"PD {args.prefill} prefill + {args.decode} decode: {t_pd:.1f} s; p99 TTFT {s['ttft_p99'] * 1e3:.0f} ms, "
          f"p99 TPOT {s['tpot_p99'] * 1e3:.1f} ms, slo_ok {s['slo_ok']:.4f}, utilisation prefill "
          f"{s['prefill_utilisation']:.2f} / decode {s['decode_utilisation']:.2f}, transfer p99 "
          f"{s['transfer_p99'] * 1e3:.2f} ms, ${s['cost_usd']:,.0f}")


if __name__ == "__main__":
    main()
