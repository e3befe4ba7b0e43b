"""Timings of the planner: the chapter's max_rate, a full plan, and a 100-option sweep.

    .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim import presets                                    # noqa: E402
from sim import max_rate, plan                             # noqa: E402
from sim.sweep import sweep                                # noqa: E402


def timed(label, fn):
    start = time.perf_counter()
    out = fn()
    print(f"{label:48} {time.perf_counter() - start:8.3f} s")
    return out


def main() -> None:
    chapter = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8",
                               mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)
    rate = timed("max_rate (chapter bisection, 12 x 1500 requests)",
                 lambda: max_rate(chapter, (2000, 500), 2.0, 0.05, method="bisect"))
    print(f"  -> {rate} req/s (the presets' chapter instance, within 0.1% of the chapter's Setup, which gives 16.758)")
    timed("plan (auto search, chapter instance)",
          lambda: plan(200, chapter, 2000, 500, 2.0, 0.05, gpus_per_instance=8))
    grid = {"gpu": sorted(presets.GPUS), "tp": [1, 2, 4, 8], "weight_dtype": ["bf16", "fp8"],
            "max_num_batched_tokens": [2048, 8192]}
    rows = timed("sweep: llama-3-70b, 6 GPUs x 4 TP x 2 dtypes x 2 budgets",
                 lambda: sweep("llama-3-70b", 200, 2000, 500, 2.0, 0.05, grid=grid))
    feasible = [r for r in rows if r.feasible]
    print(f"  -> {len(rows)} options, {len(feasible)} feasible; cheapest: {feasible[0].settings} "
          f"{feasible[0].gpus} GPUs ${feasible[0].usd_per_hour:,.0f}/h")


if __name__ == "__main__":
    main()
