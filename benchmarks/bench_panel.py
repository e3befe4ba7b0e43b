"""Responsiveness of every chapter's panel: each control moved over its values, timed through the
widgets' own path.

    python benchmarks/bench_panel.py                      # every chapter in PANELS
    python benchmarks/bench_panel.py --chapters 02 03     # some
    python benchmarks/bench_panel.py --values 4           # at most 4 values per control (a sample)
    python benchmarks/bench_panel.py --random 100         # plus 100 random moves per panel
    python benchmarks/bench_panel.py --chapters 02 --estimates 40   # chapter 02's estimate vs its search

A panel is built (``background=False`` where it has a worker thread: a move then runs the update in
the caller, the code a widget's observer runs) after its module's caches are cleared, so every
figure is computed, not read back. Then each control in turn is set to each of its other values
(all of them, or ``--values`` spread over its range), in a shuffled order, and set back to the
default before the next control; a move is timed from the assignment to the panel's last output.
Printed per control: how many moves, the median and the worst; per panel: the build and the
first move; with ``--random``, random moves over all controls (one control per move, as a learner
would), median / p90 / worst.

What is timed is how long the panel takes to show figures for the new position. A panel that
shows a provisional answer first (chapter 02 off its table: ``course.estimate``, marked as an
estimate, while the search runs) reports that moment (its ``first_s``) and, in the same row, when the
exact figures showed and when the whole update (chart included) ended, so nothing is hidden; any
other panel's figures are its whole update. (Until 2026-12 chapter 02's row timed the whole update,
chart included; on a table position the chart adds about a millisecond.)

The budget (issue 19): every control's median <= 100 ms and worst <= 300 ms; a row over budget is
marked ``OVER``. Times depend on the machine and what else runs on it (the load average is
printed); the figures are printed, not asserted. ``--estimates N`` measures the provisional
answer's error against the search's at N random chapter-02 positions three or more moves from the
chapter's (some with another instance), the search computed live.

Positions that need a capacity search or a fleet run are answered from the panel tables
(``course.memo``) where they hold them; the first line says whether each table matches the code
(a stale one is never read: those moves are computed live and show it).

Adding a chapter's panel is one line in ``PANELS``: the chapter, the module, the factory, its
keyword arguments, and the functions whose caches hold its computations (``"*"``: every
``functools.lru_cache`` of the module; the warm-up the notebook's earlier cells do is not assumed).
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim import engine  # noqa: E402

BUDGET_MEDIAN_S, BUDGET_WORST_S = 0.1, 0.3

# chapter -> (module, panel factory, its keyword arguments, modules whose caches it reads)
PANELS = {
    "01": ("course.panel", "rate_panel", {"background": False}, ("course.panel",)),
    "02": ("course.panel", "design_panel", {"background": False}, ("course.panel",)),
    "03": ("course.ch03", "gateway_panel", {"background": False}, ("course.ch03",)),
    "04": ("course.ch04", "spec_panel", {}, ("course.ch04",)),
    "05": ("course.ch05", "quant_panel", {}, ("course.ch05",)),
    "06": ("course.ch06", "prefix_panel", {}, ("course.ch06",)),
    "07": ("course.ch07", "pd_panel", {}, ("course.ch07",)),
    "08": ("course.ch08", "spec_load_panel", {}, ("course.ch08",)),
    "09": ("course.ch09", "parallel_panel", {}, ("course.ch09",)),
    "10": ("course.ch10", "long_panel", {}, ("course.ch10",)),
}


def clear_caches(modules) -> None:
    """Clear every ``lru_cache`` (and ``clear_caches()``) of the modules and of ``sim.capacity``'s
    memo, so a build computes what it shows."""
    from sim import capacity
    getattr(capacity, "clear_memo", lambda: None)()
    for name in modules:
        mod = importlib.import_module(name)
        if hasattr(mod, "clear_caches"):
            mod.clear_caches()
        for value in list(vars(mod).values()):
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", name) == name:
                value.cache_clear()


def values_of(control) -> list:
    """A control's positions: a dropdown's or selection slider's option values, a slider's steps."""
    if hasattr(control, "options"):
        return [o[1] if isinstance(o, tuple) and len(o) == 2 else o for o in control.options]
    if isinstance(control.value, bool):
        return [False, True]
    lo, hi, step = control.min, control.max, control.step
    return [round(lo + i * step, 2) for i in range(round((hi - lo) / step) + 1)]


def controls_of(p) -> dict:
    return dict(p.controls)


def spread(xs: list, k: int | None) -> list:
    """At most k of xs, evenly spread over them (both ends kept); all when k is None."""
    if k is None or len(xs) <= k:
        return list(xs)
    return [xs[round(i * (len(xs) - 1) / (k - 1))] for i in range(k)] if k > 1 else [xs[0]]


def timed_set(p, control, value) -> tuple[float, float, float]:
    """(first figures, exact figures, whole update) in seconds for one move: all three the whole
    update unless the panel reports ``first_s`` / ``answer_s`` (a provisional answer first)."""
    start = time.perf_counter()
    control.value = value                  # the observer runs the update, synchronously here
    total = time.perf_counter() - start
    first, exact = getattr(p, "first_s", None), getattr(p, "answer_s", None)
    if first is None or exact is None:
        return total, total, total
    return first, exact, total


def sweep(p, rng: random.Random, k: int | None) -> dict:
    """control -> times (moves x (first, exact, whole), s) of moving it to each of its other
    (sampled) values, from the defaults."""
    out = {}
    for name, control in controls_of(p).items():
        default = control.value
        choices = [v for v in spread(values_of(control), k) if v != default]
        rng.shuffle(choices)
        out[name] = np.array([timed_set(p, control, v) for v in choices]).reshape(-1, 3)
        if control.value != default:
            control.value = default
    return out


def random_moves(p, n: int, rng: random.Random) -> np.ndarray:
    controls = controls_of(p)
    names = list(controls)
    times = []
    for _ in range(n):
        control = controls[rng.choice(names)]
        times.append(timed_set(p, control, rng.choice([v for v in values_of(control) if v != control.value])))
    return np.array(times).reshape(-1, 3)


def later(xs: np.ndarray) -> str:
    """The exact figures' and the whole update's median / worst, where an estimate came first."""
    if np.array_equal(xs[:, 0], xs[:, 1]):
        return ""
    return (f"   (exact figures: median {np.median(xs[:, 1]) * 1e3:.0f} ms, worst {xs[:, 1].max() * 1e3:.0f} ms;"
            f" whole update worst {xs[:, 2].max() * 1e3:.0f} ms)")


def flag(median: float, worst: float) -> str:
    return "" if median <= BUDGET_MEDIAN_S and worst <= BUDGET_WORST_S else "  OVER"


def bench(chapter: str, rng: random.Random, k: int | None, n_random: int) -> list[tuple]:
    module, factory, kwargs, caches = PANELS[chapter]
    clear_caches(caches)
    start = time.perf_counter()
    p = getattr(importlib.import_module(module), factory)(**kwargs)
    built = time.perf_counter() - start
    controls = controls_of(p)
    first_name = next(iter(controls))
    first_control = controls[first_name]
    default = first_control.value
    first = timed_set(p, first_control, next(v for v in values_of(first_control) if v != default))[0]
    first_control.value = default
    print(f"chapter {chapter} ({module}.{factory}): built in {built:.2f} s, first move ({first_name}) "
          f"{first * 1e3:.0f} ms")
    rows = []
    for name, xs in sweep(p, rng, k).items():
        if len(xs):
            med, worst = float(np.median(xs[:, 0])), float(xs[:, 0].max())
            rows.append((chapter, name, len(xs), med, worst))
            print(f"  {name:<14} {len(xs):3d} moves   median {med * 1e3:7.1f} ms   worst {worst * 1e3:7.1f} ms"
                  + flag(med, worst) + later(xs))
    if n_random:
        xs = random_moves(p, n_random, rng)
        med, worst = float(np.median(xs[:, 0])), float(xs[:, 0].max())
        rows.append((chapter, "(random)", len(xs), med, worst))
        print(f"  {'random moves':<14} {len(xs):3d} moves   median {med * 1e3:7.1f} ms   p90 "
              f"{np.percentile(xs[:, 0], 90) * 1e3:7.1f} ms   worst {worst * 1e3:7.1f} ms" + flag(med, worst)
              + later(xs))
    return rows


def estimates(n: int, rng: random.Random) -> None:
    """Chapter 02's provisional rate (``course.estimate.quick_rate``) against the search's
    (``course.panel.instance``, computed live) at n random positions three to five slider moves from
    the chapter's, a third of them on an instance one dropdown away."""
    from course import estimate, panel, panel_grids
    options = panel_grids._slider_options_02()
    hws = panel_grids._one_dropdown_02()
    errors, took, none, start = [], [], 0, time.perf_counter()
    while len(errors) + none < n:
        x = dict(input_len=panel.INPUT_LEN, output_len=panel.OUTPUT_LEN, mfu=panel.MFU, ttft_slo=panel.TTFT_SLO_S,
                 tpot_slo=panel.TPOT_SLO_S)
        for name in rng.sample(panel_grids.SLIDERS_02, rng.randint(3, 5)):
            x[name] = rng.choice([v for v in options[name] if v != x[name]])
        hw = rng.choice(hws) if rng.random() < 1 / 3 else panel.CHAPTER
        args = (x["input_len"], x["output_len"], x["mfu"], hw, x["ttft_slo"], x["tpot_slo"])
        if panel._setup_or_reason(hw, x["mfu"], x["input_len"], x["output_len"])[0] is None:
            continue
        exact = panel.instance.live(*args).plan
        t = time.perf_counter()
        guess = estimate.quick_rate.__wrapped__(*args)
        took.append(time.perf_counter() - t)
        if exact is None or guess is None:
            none += 1                     # no estimate, or no rate to compare it with
            continue
        errors.append(guess / exact.rate_per_instance - 1)
    if not errors:
        print(f"estimate vs search: no position of {n} had both a rate and an estimate")
        return
    e = np.abs(np.array(errors))
    print(f"estimate vs search at {n} positions 3-5 moves away ({time.perf_counter() - start:.0f} s): "
          f"{len(e)} compared, |error| median {np.median(e):.1%}, p90 {np.percentile(e, 90):.1%}, worst {e.max():.1%}, "
          f"mean signed {np.mean(errors):+.1%}; {none} without an estimate or without a rate; the quick search "
          f"took median {np.median(took) * 1e3:.0f} ms, worst {max(took) * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chapters", nargs="*", default=list(PANELS), choices=list(PANELS))
    parser.add_argument("--values", type=int, default=None, help="at most this many values per control")
    parser.add_argument("--random", type=int, default=0, help="random moves per panel after the sweep")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--estimates", type=int, default=0,
                        help="chapter 02's estimate against its search at this many random positions")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"compiled engine loops: {engine.compiled()}  (cores: {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")
    from course import memo
    stale = [f"{name} (chapter {ch})" for ch, name, ok in memo.status() if not ok and ch in args.chapters]
    print("panel tables (course.memo): " + ("all current" if not stale else
          "STALE, computed live: " + ", ".join(stale) + "; refresh: python -m course.memo build"))
    rows = []
    for chapter in args.chapters:
        rows += bench(chapter, rng, args.values, args.random)
    if args.estimates:
        estimates(args.estimates, rng)
    over = [r for r in rows if flag(r[3], r[4])]
    print(f"\n{len(rows) - len(over)} of {len(rows)} controls within the budget (median <= "
          f"{BUDGET_MEDIAN_S * 1e3:.0f} ms, worst <= {BUDGET_WORST_S * 1e3:.0f} ms); load average "
          f"{os.getloadavg()[0]:.1f}")
    for chapter, name, n, med, worst in over:
        print(f"  over: chapter {chapter} {name}: median {med * 1e3:.0f} ms, worst {worst * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
