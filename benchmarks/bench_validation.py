"""Predicted against published: every row of tests/validation/, by slice, with a leave-one-source-out score.

    .venv/bin/python benchmarks/bench_validation.py [--workers 2] [--write] [--rows] [--quick] [--admission]
                                                    [--what-if TERM ...]

Runs each supported row (``benchmarks/fidelity.py`` says how each scenario is simulated) with the
presets' calibrated step model at every point of the grid of the two constants fitted to the whole
set (the host time per step, which no kernel table measures: ``BASE_OVERHEAD_S`` per step and
``HOST_S_PER_SEQ`` per decoding sequence), and prints:

- MAPE and signed bias overall and per slice (what the row measures: offline throughput, capacity at
  the SLO, latency at fixed concurrency, ...; each of those by the year of its source, a proxy for
  the engine release; GPU, TP, model, metric, scenario, source) at the value
  that fits the whole set best; the rows left out and why;
- apart from them, the latency rows of MLPerf server runs, measured at the system's saturation
  (``fidelity.saturated``): they measure the scheduler at capacity more than the step model, so
  they are reported in their own table and take no part in the fit;
- the leave-one-source-out score: for each source, the constant chosen without that source's rows,
  and its rows scored with it;
- overall and for the three slices the targets are set on (offline throughput, capacity at the SLO,
  latency at fixed concurrency: MAPE <= 15%, |bias| <= 5%), both scores and whether they are met.

``--write`` stores the figures in tests/validation/report.json (the tests check them against the
rows and re-simulate a sample) and the residual ranges the planner's error bars use in
sim/presets/residuals.py. ``--rows`` prints every row. ``--admission`` simulates each engine's
admission policy at saturation (``fidelity.admission_engine``: paged blocks for vLLM and NVIDIA's
MLPerf harness, SGLang's ratio reservation, TensorRT-LLM's no-evict reservation otherwise); it is
about ten times slower on the large MLPerf batches and never writes the report. ``--what-if TERM``
(``benchmarks/what_if.py``: ``swiglu``) adds a step-model
term that the presets lack to every row and scores the set with it; it never writes the report either.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fidelity as F                                       # noqa: E402
import what_if                                             # noqa: E402

REPORT = F.DATA / "report.json"
RESIDUALS = F.ROOT / "sim" / "presets" / "residuals.py"
DIMENSIONS = ("slice", "slice/year", "gpu", "tp", "model", "metric", "scenario", "source")
TARGET_SLICES = ("offline throughput", "capacity at the SLO", "latency at fixed concurrency")
TARGET_MAPE, TARGET_BIAS = 0.15, 0.05         # issue 22's targets, per slice and overall


def slice_table(scored, dims=DIMENSIONS) -> list[tuple[str, str, dict]]:
    """(dimension, value, figures) rows: overall first, then each dimension's slices."""
    out = [("all", "all", F._figures([s.error for s in scored]))]
    for dim in dims:
        groups: dict[str, list[float]] = {}
        for s in scored:
            groups.setdefault(s.row.slice_keys[dim], []).append(s.error)
        out += [(dim, k, F._figures(v)) for k, v in sorted(groups.items())]
    return out


def markdown(table) -> str:
    lines = ["| slice | rows | MAPE | bias |", "|---|---:|---:|---:|"]
    for dim, key, f in table:
        name = "**all rows**" if dim == "all" else f"{dim} = {key}"
        lines.append(f"| {name} | {f['rows']} | {f['mape']:.1%} | {f['bias']:+.1%} |")
    return "\n".join(lines)


def targets_table(scored, loso_errors: dict | None) -> list[dict]:
    """Overall and per target slice: rows, MAPE and bias at the fitted constant and left one source
    out (when ``loso_errors``, row id -> error, is given), and whether the targets are met."""
    out = []
    for name in ("all",) + TARGET_SLICES:
        mine = [s for s in scored if name == "all" or s.row.kind == name]
        if not mine:
            continue
        f = F._figures([s.error for s in mine])
        row = {"slice": name, **f}
        if loso_errors is not None:
            g = F._figures([loso_errors[s.row.id] for s in mine])
            row.update(loso_mape=g["mape"], loso_bias=g["bias"])
        worst_mape = max(row["mape"], row.get("loso_mape", 0))
        worst_bias = max(abs(row["bias"]), abs(row.get("loso_bias", 0)))
        row["met"] = worst_mape <= TARGET_MAPE and worst_bias <= TARGET_BIAS
        out.append(row)
    return out


def targets_markdown(rows: list[dict]) -> str:
    lines = ["| slice | rows | MAPE | bias | leave one source out: MAPE | bias | targets (15% / 5%) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        name = "**all rows**" if r["slice"] == "all" else r["slice"]
        loso = (f"{r['loso_mape']:.1%} | {r['loso_bias']:+.1%}" if "loso_mape" in r else "- | -")
        lines.append(f"| {name} | {r['rows']} | {r['mape']:.1%} | {r['bias']:+.1%} | {loso} | "
                     f"{'met' if r['met'] else 'not met'} |")
    return "\n".join(lines)


def residual_ranges(scored) -> dict:
    """Per (gpu, tp), per gpu and overall: the 10th and 90th percentiles of published / predicted over
    throughput rows (``rows`` >= 3 needed): how far the model's capacity has been off."""
    import numpy as np
    groups: dict[str, list[float]] = {}
    for s in scored:
        if s.row.metric not in F.THROUGHPUT:
            continue
        ratio = s.row.value / s.predicted
        for key in (f"{s.row.gpu}/tp{s.row.tp}", s.row.gpu, "all"):
            groups.setdefault(key, []).append(ratio)
    return {k: {"rows": len(v), "low": float(np.percentile(v, 10)), "high": float(np.percentile(v, 90))}
            for k, v in sorted(groups.items()) if len(v) >= 3}


def _value(v) -> str:
    """A grid value as the report prints it."""
    return f"{v[0] * 1e3:g} ms + {v[1] * 1e6:g} us per sequence"


def render_residuals(ranges: dict, base: float, host: float) -> str:
    lines = ['"""How far the calibrated step model\'s capacity has been off, per slice of the validation set.',
             "",
             "Generated by benchmarks/bench_validation.py --write from tests/validation/ (do not edit): for each",
             "(gpu, tp), each gpu and all rows, the 10th and 90th percentiles of published / predicted",
             "throughput. ``sim.planning`` multiplies a planned rate by them to give its range.",
             '"""', "", f"BASE_OVERHEAD_S = {base!r}   # the values the set was scored at",
             f"HOST_S_PER_SEQ = {host!r}", "", "RANGES = {"]
    for k, v in ranges.items():
        lines.append(f"    {k!r}: ({v['low']:.4f}, {v['high']:.4f}, {v['rows']}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--write", action="store_true", help="write report.json and sim/presets/residuals.py")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--quick", action="store_true", help="only the chosen constant: no leave-one-source-out")
    ap.add_argument("--admission", action="store_true",
                    help="each engine's admission policy at saturation (fidelity.admission_engine; slow)")
    ap.add_argument("--what-if", action="append", default=[],
                    choices=what_if.TERMS,
                    help="add a step-model term that is not in the presets (benchmarks/what_if.py); repeatable")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    rows, datasets = F.load_rows(), F.load_datasets()
    problems = F.problems(rows, F.load_sources(), datasets)
    if problems:
        print("\n".join(problems))
        return 1
    excluded = {r.id: F.unsupported(r, datasets) for r in rows}
    run = [r for r in rows if not excluded[r.id]]
    grid = ((F.presets.BASE_OVERHEAD_S, F.presets.HOST_S_PER_SEQ),) if args.quick else F.GRID
    fitted_rows = [r for r in run if not F.saturated(r)]      # the saturated rows take no part in the fit
    by_value = {}
    for v in grid:
        t0 = time.perf_counter()
        by_value[v] = F.evaluate_with(fitted_rows, datasets, v, workers=args.workers, admission=args.admission,
                                      what_if=tuple(args.what_if))
        print(f"  host time {_value(v)}: MAPE {F.mape(s.error for s in by_value[v]):.1%} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    best = F.best_value(by_value)
    base, host = best
    scored = by_value[best] + F.evaluate_with([r for r in run if F.saturated(r)], datasets, best,
                                              workers=args.workers, admission=args.admission,
                                              what_if=tuple(args.what_if))
    print(f"{len(rows)} rows from {len({r.source for r in rows})} sources; {len(run)} simulated "
          f"({sum(F.saturated(r) for r in run)} of them latency at saturation), {len(rows) - len(run)} left out; "
          f"host time per step fitted to the set: {_value(best)}")
    if args.rows:
        for s in sorted(scored, key=lambda s: s.error):
            r = s.row
            print(f"{s.error:+7.1%}  {r.id:70} {r.metric}:{r.statistic} published {r.value:.4g} predicted {s.predicted:.4g}")
    headline = [s for s in scored if not F.saturated(s.row)]
    table = slice_table(headline)
    print(markdown(table))
    saturated_table = slice_table([s for s in scored if F.saturated(s.row)], dims=("metric", "gpu"))
    print("latency at saturation (MLPerf server and interactive runs, not in the figures above):")
    print(markdown(saturated_table))
    reasons: dict[str, int] = {}
    for rid, why in excluded.items():
        if why:
            reasons[why] = reasons.get(why, 0) + 1
    print("left out:")
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  {n:3}  {why}")
    loso = None
    if not args.quick:
        loso = F.leave_one_source_out(by_value)
        print("leave one source out (constant chosen without the source, its rows scored with it):")
        for source, f in loso["sources"].items():
            print(f"  {source:32} {f['rows']:3} rows  {_value(f['value'])}  MAPE {f['mape']:6.1%}  bias {f['bias']:+6.1%}")
        print(f"  {'all (pooled)':32} {loso['all']['rows']:3} rows  MAPE {loso['all']['mape']:.1%}  bias {loso['all']['bias']:+.1%}")
    targets = targets_table(headline, loso["errors"] if loso else None)
    print("the three slices against the targets (MAPE <= 15%, |bias| <= 5%, at the fitted constant and "
          "left one source out):")
    print(targets_markdown(targets))
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.write and (args.admission or args.what_if):
        print("not written: report.json and residuals.py hold the default rows' figures "
              "(no --admission, no --what-if)")
    elif args.write:
        report = {"base_overhead_s": base, "host_s_per_seq": host, "grid": [list(v) for v in grid],
                  "predicted": {s.row.id: s.predicted for s in scored},
                  "excluded": {rid: why for rid, why in excluded.items() if why},
                  "slices": [[d, k, f] for d, k, f in table],
                  "saturated": [[d, k, f] for d, k, f in saturated_table], "loso": loso,
                  "targets": targets}
        REPORT.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        RESIDUALS.write_text(render_residuals(residual_ranges(scored), base, host))
        print(f"wrote {REPORT.relative_to(F.ROOT)} and {RESIDUALS.relative_to(F.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
