"""Fit the step model's per-GPU kernel terms to measured kernel timings.

    python benchmarks/gpu/derive_kernel_terms.py --out /tmp/kernel_terms.json   # needs aiconfigurator-core
    python benchmarks/gpu/fit_kernel_terms.py --full /tmp/kernel_terms.json --write-inputs   # compact inputs
    python benchmarks/gpu/fit_kernel_terms.py --write                         # sim/presets/kernels.py

The inputs (``kernel_inputs.json`` beside this file, extracted from the measured tables that ship in
the Apache-2.0 package aiconfigurator-core 0.12.0: TensorRT-LLM GEMM, all-reduce and attention
timings per GPU) are the only data this script reads. Per GPU and weight dtype it fits, over the
summed GEMM time of one Llama-3 decoder layer (8B, 70B and 405B shapes at tp 1, 2, 4, 8; m = 1 to
16384 tokens; 180 points):

    t(m) = || 2 m S / (peak * e(S)), B / (hbm * u) ||_p + c,    e(S) = e_inf * S / (S + s_half)

S = the layer's parameters per GPU, B = their bytes; ||x, y||_p = (x**p + y**p)**(1/p), the
max for p = 0 (p = 0, 2, 4, 8 are each fitted and the best kept: near the ridge point the measured
GEMMs run below both bounds, so their efficiency depends on the step's tokens m as well as on S). ``e_inf`` is the matmul efficiency of large
GEMMs, ``s_half`` the per-GPU size at which it halves (small tensor-parallel slices run the tensor
cores less well), ``u`` the weight-streaming fraction of HBM bandwidth and ``c`` the fixed time of a
layer's four GEMM launches (activation quantization included for FP8). The fit minimises squared log
errors on a coarse-to-fine grid (no fitting library needed). Alongside it takes, per GPU:

- ``attn_mfu``: context (prefill) attention's FLOP fraction of dense peak, mean over head layouts;
- ``kv_util``: decode attention's KV-read fraction of HBM bandwidth (calls reading >= 128 MiB);
- ``attn_floor_s``: the shortest decode-attention call (one sequence, 512 tokens): a per-layer floor;
- ``allreduce``: TensorRT-LLM's custom all-reduce per tp as ``alpha + bytes / beta``;
- ``allreduce_us``: the same all-reduce's measured table itself, (message bytes, microseconds) per tp:
  the presets' step reads it at each step's own message size (``Setup.comm_curve``), because at tp
  4-8 it is no line (the fit is 40-55% short at 1-2 MiB and 50-87% over at 80-256 MiB).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INPUTS = HERE / "kernel_inputs.json"
OUTPUT = ROOT / "sim" / "presets" / "kernels.py"

GPUS = {"a100_sxm": "a100-80gb", "h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200",
        "gb200": "gb200", "l40s": "l40s"}
MODES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}
SOURCE = "aiconfigurator-core 0.12.0 (Apache-2.0), systems/data/<gpu>/{gemm,comm,attention}/trtllm"


# --- From the full extraction to the compact inputs --------------------------------------------

def compact(full: dict) -> dict:
    """Keep only what the fit reads, from derive_kernel_terms.py's full JSON."""
    out = {"source": SOURCE, "gpus": {}}
    for aic_name, name in GPUS.items():
        g = full["gpus"].get(aic_name)
        if not g:
            continue
        y = g["system_yaml"]
        entry = {"peak": {"bf16": y["bfloat16_tc_flops"], "fp8": y.get("fp8_tc_flops"),
                          "fp4": y.get("fp4_tc_flops")},
                 "hbm": y["mem_bw"], "memory": y["mem_capacity"], "gemm": {}, "allreduce": {}}
        backend = g["gemm"]["trtllm"]
        entry["gemm_version"] = backend["version"]
        for mode, dtype in MODES.items():
            m = backend["modes"].get(mode)
            if not m:
                continue
            rows = []
            for model, by_tp in m["models"].items():
                for tp, v in by_tp.items():
                    if isinstance(v, dict) and "curve" in v:
                        rows.append({"model": model, "tp": int(tp[2:]), "params": v["params_per_gpu"],
                                     "bytes": v["weight_bytes_per_gpu"], "m": v["curve"]["m"],
                                     "time_us": v["curve"]["time_us"]})
            entry["gemm"][dtype] = rows
        custom = g["allreduce"].get("custom", {}).get("trtllm", {})
        for impl in custom.get("impls", {}).values():
            for tp in ("tp2", "tp4", "tp8"):
                if tp in impl:
                    raw = impl[tp]["raw_time_us_by_bytes"]
                    entry["allreduce"][tp] = {int(b): t for b, t in raw.items()}
            break
        entry["context_attention"] = _plateaus(g["context_attention"], "plateau_frac")
        entry["generation_attention"] = _plateaus(g["generation_attention"], "plateau_frac")
        entry["generation_floor_us"] = _floor(g["generation_attention"])
        out["gpus"][name] = entry
    return out


def _kernels(table: dict, backend_name: str = "trtllm") -> dict:
    backend = table.get(backend_name) or next(iter(table.values()))
    kernels = backend["kernels"]
    return kernels.get(backend.get("default_kernel_source")) or next(iter(kernels.values()))


def _plateaus(table: dict, key: str) -> dict:
    """Mean plateau fraction over head layouts, per KV dtype ('bf16' or 'fp8'), from TensorRT-LLM's
    table unless it reads faster than HBM (A100's decode table does, see SUMMARY: then the next
    backend's)."""
    for name in ["trtllm"] + [b for b in table if b != "trtllm"]:
        if name not in table:
            continue
        found = _plateaus_of(_kernels(table, name), key)
        if found and max(found.values()) <= 1.0:
            return found
    return {}


def _plateaus_of(kernels: dict, key: str) -> dict:
    out = {}
    for dtype_key, d in kernels.items():
        kv = "fp8" if "fp8" in dtype_key.split("kv")[-1] else "bf16"
        values = [h[key] for h in d["head_configs"].values() if h.get(key)]
        if values:
            out.setdefault(kv, []).extend(values)
    return {k: float(np.mean(v)) for k, v in out.items()}


def _floor(table: dict) -> float:
    times = []
    for d in _kernels(table).values():
        for h in d["head_configs"].values():
            t = h.get("grid_time_us_frac", {}).get("b1_ctx512")
            if t:
                times.append(t[0])
    return float(np.median(times)) if times else 0.0


# --- The fits ----------------------------------------------------------------------------------

ROOFLINE_P = (0, 2, 4, 8)     # how compute and weight streaming combine (sim.setup.ROOFLINE_P): 0 = max


def gemm_model(params, s, b, m, peak, hbm, p=0):
    e_inf, s_half, u, c = params
    eff = e_inf * s / (s + s_half)
    compute, memory = 2 * m * s / (peak * eff), b / (hbm * u)
    if p == 0:
        return np.maximum(compute, memory) + c
    return (compute ** p + memory ** p) ** (1 / p) + c


def fit_gemm(rows: list[dict], peak: float, hbm: float) -> dict:
    """(e_inf, s_half, u, c) for each roofline exponent p of ``ROOFLINE_P``, and the p whose fit has
    the smallest squared log error over every (shape, tp, m) point: the measured GEMMs pass from
    weight streaming to compute gradually (a few hundred tokens), which the p-norm follows."""
    fits = [dict(fit_gemm_at(rows, peak, hbm, p), p=p) for p in ROOFLINE_P]
    return min(fits, key=lambda f: f["msle"])


def fit_gemm_at(rows: list[dict], peak: float, hbm: float, p: int) -> dict:
    """(e_inf, s_half, u, c) minimising the squared log error over every (shape, tp, m) point."""
    s = np.concatenate([[r["params"]] * len(r["m"]) for r in rows]).astype(float)
    b = np.concatenate([[r["bytes"]] * len(r["m"]) for r in rows]).astype(float)
    m = np.concatenate([r["m"] for r in rows]).astype(float)
    t = np.concatenate([r["time_us"] for r in rows]).astype(float) * 1e-6
    ranges = [(0.2, 1.0), (1e5, 1e9), (0.1, 1.2), (0.0, 2e-4)]
    log_axis = [False, True, False, False]
    best = None
    for _ in range(6):                                   # coarse to fine
        axes = [np.geomspace(lo, hi, 13) if lg else np.linspace(lo, hi, 13)
                for (lo, hi), lg in zip(ranges, log_axis)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 4)
        errs = np.empty(len(grid))
        for i in range(0, len(grid), 2000):
            g = grid[i:i + 2000, :, None]
            pred = gemm_model((g[:, 0], g[:, 1], g[:, 2], g[:, 3]), s, b, m, peak, hbm, p)
            errs[i:i + 2000] = (np.log(pred / t) ** 2).mean(axis=1)
        best = grid[int(np.argmin(errs))]
        ranges = [_zoom(v, a, bounds) for v, a, bounds in
                  zip(best, axes, [(0.05, 1.0), (1e3, 1e10), (0.05, 1.5), (0.0, 1e-3)])]
    pred = gemm_model(tuple(best), s, b, m, peak, hbm, p)
    rel = pred / t - 1
    return {"e_inf": float(best[0]), "s_half": float(best[1]), "u": float(best[2]), "c_s": float(best[3]),
            "points": int(len(t)), "msle": float((np.log(pred / t) ** 2).mean()),
            "mean_abs_err": float(np.abs(rel).mean()),
            "max_abs_err": float(np.abs(rel).max())}


def _zoom(value, axis, bounds):
    """The next grid's range: the neighbours of ``value`` on ``axis``, within ``bounds``."""
    i = int(np.argmin(np.abs(np.asarray(axis) - value)))
    lo, hi = axis[max(i - 1, 0)], axis[min(i + 1, len(axis) - 1)]
    return (max(lo, bounds[0]), min(hi, bounds[1]))


def fit_allreduce(raw: dict) -> dict:
    """alpha + bytes / beta over 16 KiB .. 64 MiB, least squares on relative error."""
    pts = sorted((int(k), float(v) * 1e-6) for k, v in raw.items() if 16384 <= int(k) <= 64 * 2**20)
    x = np.array([p[0] for p in pts], float)
    t = np.array([p[1] for p in pts], float)
    a = np.stack([np.ones_like(x), x], 1) / t[:, None]
    alpha, inv_beta = np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0]
    return {"alpha_s": float(max(alpha, 0.0)), "beta_Bps": float(1 / inv_beta)}


def fit_all(inputs: dict) -> dict:
    out = {}
    for name, g in inputs["gpus"].items():
        entry = {"gemm": {}, "allreduce": {}}
        for dtype, rows in g["gemm"].items():
            peak = g["peak"][dtype]
            if rows and peak:
                entry["gemm"][dtype] = fit_gemm(rows, peak, g["hbm"])
        entry["allreduce_us"] = {}
        for tp, raw in g["allreduce"].items():
            entry["allreduce"][int(tp[2:])] = fit_allreduce(raw)
            entry["allreduce_us"][int(tp[2:])] = tuple(sorted((int(b), float(t)) for b, t in raw.items()))
        entry["attn_mfu"] = g["context_attention"]
        entry["kv_util"] = g["generation_attention"]
        entry["attn_floor_s"] = g["generation_floor_us"] * 1e-6
        entry["memory"] = g["memory"]
        entry["peak"] = {k: v for k, v in g["peak"].items() if v}
        entry["hbm"] = g["hbm"]
        out[name] = entry
    return out


# --- Output ------------------------------------------------------------------------------------

def render(fits: dict) -> str:
    lines = ['"""Per-GPU kernel terms of the step model, fitted to measured kernel timings.',
             "",
             "Generated by benchmarks/gpu/fit_kernel_terms.py from benchmarks/gpu/kernel_inputs.json",
             f"({SOURCE}); do not edit by hand. See that script's docstring for the fitted form.",
             '"""', "", "KERNELS = {"]
    for name, e in fits.items():
        lines.append(f"    {name!r}: {{")
        lines.append(f"        'memory': {e['memory']!r},  # bytes, as the driver reports")
        lines.append(f"        'peak': {e['peak']!r},  # the fractions below are of these dense FLOP/s")
        lines.append(f"        'hbm': {e['hbm']!r},  # ... and of this HBM bandwidth, bytes/s")
        lines.append("        'gemm': {")
        for dtype, f in e["gemm"].items():
            lines.append(f"            {dtype!r}: dict(e_inf={f['e_inf']:.4f}, s_half={f['s_half']:.4g}, "
                         f"u={f['u']:.4f}, c_s={f['c_s']:.4g}, p={f['p']}),  # {f['points']} points, mean |err| "
                         f"{f['mean_abs_err']:.1%}, max {f['max_abs_err']:.0%}")
        lines.append("        },")
        lines.append("        'allreduce': {" + ", ".join(
            f"{tp}: ({a['alpha_s']:.4g}, {a['beta_Bps']:.4g})" for tp, a in sorted(e["allreduce"].items())) + "},")
        lines.append("        'allreduce_us': {  # measured: (message bytes, microseconds)")
        for tp, table in sorted(e["allreduce_us"].items()):
            lines.append(f"            {tp}: ({', '.join(f'({b}, {t!r})' for b, t in table)}),")
        lines.append("        },")
        lines.append(f"        'attn_mfu': {{{', '.join(f'{k!r}: {v:.4f}' for k, v in sorted(e['attn_mfu'].items()))}}},")
        lines.append(f"        'kv_util': {{{', '.join(f'{k!r}: {v:.4f}' for k, v in sorted(e['kv_util'].items()))}}},")
        lines.append(f"        'attn_floor_s': {e['attn_floor_s']:.4g},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", help="derive_kernel_terms.py's full JSON, to (re)write the compact inputs")
    ap.add_argument("--write-inputs", action="store_true", help="write kernel_inputs.json from --full")
    ap.add_argument("--write", action="store_true", help="write sim/presets/kernels.py")
    args = ap.parse_args(argv)
    if args.full:
        inputs = compact(json.loads(Path(args.full).read_text()))
        if args.write_inputs:
            INPUTS.write_text(json.dumps(inputs, separators=(",", ":")))
    else:
        inputs = json.loads(INPUTS.read_text())
    fits = fit_all(inputs)
    for name, e in fits.items():
        for dtype, f in e["gemm"].items():
            print(f"{name:10} {dtype:5} p {f['p']} e_inf {f['e_inf']:.3f} s_half {f['s_half'] / 1e6:7.1f}M u {f['u']:.3f} "
                  f"c {f['c_s'] * 1e6:6.1f} us/layer  mean |err| {f['mean_abs_err']:.1%} max {f['max_abs_err']:.0%}")
        ar = ", ".join(f"tp{tp} {a['alpha_s'] * 1e6:.1f}us+B/{a['beta_Bps'] / 1e9:.0f}GB/s"
                       for tp, a in sorted(e["allreduce"].items()))
        print(f"{'':10} attn_mfu {e['attn_mfu']} kv_util {e['kv_util']} floor {e['attn_floor_s'] * 1e6:.1f}us; {ar}")
    if args.write:
        OUTPUT.write_text(render(fits))
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
