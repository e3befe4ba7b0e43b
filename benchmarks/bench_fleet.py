"""Fleet speed: the chapter's 200 QPS (2000 in / 500 out) for one hour on 16 colocated instances
behind least_requests, the same requests on a PD fleet, and the colocated fleet's time against the
sum of the same requests' single-instance runs.

    python benchmarks/bench_fleet.py              # one hour: 720,000 requests
    python benchmarks/bench_fleet.py --minutes 5  # shorter

Target (issue 11): <= 60 s and < 2 GB on one core for the colocated hour. Run on one core.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from sim import presets, run, workload  # noqa: E402
from sim.fleet import Fleet, run_fleet, summarize_fleet  # noqa: E402
from sim.workload import Workload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--prefill", type=int, default=10)     # what `python -m sim fleet` picks for this load
    ap.add_argument("--decode", type=int, default=3)
    args = ap.parse_args()
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8",
                             mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)
    n = int(200 * 60 * args.minutes)
    t0 = time.perf_counter()
    load = workload.poisson(200, n, 2000, 500)
    print(f"{n:,} requests at 200 req/s ({args.minutes:g} min), 2000 in / 500 out; workload built in "
          f"{time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    co = run_fleet(Fleet.of(setup, 16, router="least_requests", gpus_per_instance=8), load)
    t_co = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    s = summarize_fleet(co, 2.0, 0.05)
    print(f"colocated 16 x TP8, least_requests: {t_co:.1f} s, peak memory {rss:,.0f} MB; "
          f"p99 TTFT {s['ttft_p99'] * 1e3:.0f} ms, p99 TPOT {s['tpot_p99'] * 1e3:.1f} ms, "
          f"slo_ok {s['slo_ok']:.4f}, imbalance {s['colocated_imbalance']:.3f}, "
          f"utilisation {s['colocated_utilisation']:.2f}, ${s['cost_usd']:,.0f}")

    t0 = time.perf_counter()
    pd = run_fleet(Fleet.pd(setup, args.prefill, setup, args.decode, router="least_requests",
                            gpus_per_instance=8), load)
    t_pd = time.perf_counter() - t0
    s = summarize_fleet(pd, 2.0, 0.05)
    print(f"PD {args.prefill} prefill + {args.decode} decode: {t_pd:.1f} s; p99 TTFT {s['ttft_p99'] * 1e3:.0f} ms, "
          f"p99 TPOT {s['tpot_p99'] * 1e3:.1f} ms, slo_ok {s['slo_ok']:.4f}, utilisation prefill "
          f"{s['prefill_utilisation']:.2f} / decode {s['decode_utilisation']:.2f}, transfer p99 "
          f"{s['transfer_p99'] * 1e3:.2f} ms, ${s['cost_usd']:,.0f}")

    # The same requests, instance by instance, through the single-instance engine.
    t0 = time.perf_counter()
    same = True
    for i in range(16):
        mine = np.flatnonzero(co.instance == i)
        w = Workload("replay", tuple(co.arrival[mine].tolist()), tuple(co.input_len[mine].tolist()),
                     tuple(co.output_len[mine].tolist()))
        one = run(setup, w)
        same &= bool(np.array_equal(one.finish, co.finish[mine]))
    t_single = time.perf_counter() - t0
    print(f"the same requests, 16 single-instance runs: {t_single:.1f} s in all (fleet / sum = "
          f"{t_co / t_single:.2f}); identical per-request times: {same}")


if __name__ == "__main__":
    main()
