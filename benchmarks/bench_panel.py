"""Responsiveness of the chapter panels: random control moves, timed through the widgets' own path.

    python benchmarks/bench_panel.py               # 300 moves on chapter 02's panel, 200 on chapter 01's
    python benchmarks/bench_panel.py --moves 50    # fewer

Each panel is built (background=False: a move runs `_request -> update` in the caller, the code a
widget's observer runs in its worker thread) with cold caches, then its controls are set to random
positions, one control per move, as a learner would. Printed per panel: the first move after the
panel appears, and the median / 90th percentile / worst over all moves of

  answer   the figures, the "what changed" line and the explanation shown (chapter 02), or the
           distribution and its chart (chapter 01);
  full     the same plus chapter 02's latency curve and chart.

The budget (issue 14): median <= 100 ms, worst <= 300 ms, first move <= 1 s. Times depend on the
machine and on what else runs on it; the figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course import panel  # noqa: E402
from sim import engine  # noqa: E402


def _options(control):
    if hasattr(control, "options"):
        return list(control.options)
    lo, hi, step = control.min, control.max, control.step
    return [round(lo + i * step, 2) for i in range(round((hi - lo) / step) + 1)]


def moves(p, n: int, rng: random.Random, controls: dict, answer_attr: str | None):
    """Time n random moves; returns (answer times, full times) in seconds, and whether each ran a
    capacity search (chapter 02: a position not seen before, on an instance that can run)."""
    answers, fulls, searched = [], [], []
    names = list(controls)
    for _ in range(n):
        name = rng.choice(names)
        control = controls[name]
        choices = [v for v in _options(control) if v != control.value]
        value = rng.choice(choices)
        misses = panel.instance.cache_info().misses
        start = time.perf_counter()
        control.value = value                      # the observer runs the update, synchronously here
        full = time.perf_counter() - start
        searched.append(panel.instance.cache_info().misses > misses)
        fulls.append(full)
        answers.append(getattr(p, answer_attr) if answer_attr and p.last_update_s else full)
    return np.array(answers), np.array(fulls), np.array(searched, dtype=bool)


def report(name: str, first: tuple, answers, fulls, searched=None) -> None:
    def row(label, xs, first_x):
        print(f"  {label:<7} first move {first_x * 1e3:6.0f} ms   median {np.median(xs) * 1e3:6.0f} ms   "
              f"p90 {np.percentile(xs, 90) * 1e3:6.0f} ms   worst {xs.max() * 1e3:6.0f} ms")
    print(f"{name}: {len(fulls)} random moves")
    row("answer", answers, first[0])
    row("full", fulls, first[1])
    if searched is not None and searched.any():
        print(f"  of which {searched.sum()} ran a new capacity search (the rest: QPS / price, a position seen "
              "before, or a choice that cannot run):")
        row("answer", answers[searched], first[0])
        row("full", fulls[searched], first[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"compiled engine loops: {engine.compiled()}  (cores: {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")

    panel.clear_caches()
    start = time.perf_counter()
    p = panel.design_panel(background=False)
    print(f"chapter 02 panel built in {time.perf_counter() - start:.2f} s (cold caches)")
    a, f, _ = moves(p, 1, rng, p.controls, "answer_s")
    first = (a[0], f[0])
    a, f, searched = moves(p, args.moves, rng, p.controls, "answer_s")
    report("chapter 02 design panel", first, a, f, searched)

    panel.clear_caches()
    start = time.perf_counter()
    r = panel.rate_panel(background=False)
    print(f"chapter 01 panel built in {time.perf_counter() - start:.2f} s (cold caches)")
    controls = {"rate": r.slider, **r.choices}
    a, f, _ = moves(r, 1, rng, controls, None)
    first = (a[0], f[0])
    a, f, _ = moves(r, max(1, args.moves * 2 // 3), rng, controls, None)
    report("chapter 01 rate panel", first, a, f)


if __name__ == "__main__":
    main()
