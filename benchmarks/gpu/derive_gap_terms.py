"""Turn a measure_gaps.py JSON into the terms the step model would take (plain Python, no torch).

    python benchmarks/gpu/derive_gap_terms.py gaps.json [--out terms.json]

Only the kernel figures in that file are used; nothing is fitted to serving benchmarks.

1. Non-GEMM work per token per layer. For each shape (70B, 8B) and op set, a line t = a + b * m is
   fitted to the set's summed seconds over m >= 256 tokens (all points if fewer than two); b is the
   per-token term, t at the smallest m (64) the floor. Sets:
     unfused               plain torch ops, one op at a time (several kernels per op);
     unfused_compiled      each op compiled on its own (about one kernel per op, as vLLM/Vidur's kernels);
     fused                 add+norm+quant, rope+kv write, attention-output quant, silu*mul+quant;
     fused_swiglu_in_gemm  fused, with SiLU-mul and its quant in the gate_up GEMM's epilogue (not timed).
   Replicated part (both residual add + RMSNorm (+ quant of the GEMM input)): the same at every TP.
   Divided part (RoPE, KV write, attention-output quant, SwiGLU (+ quant)): measured at TP 1 (and for
   the 70B also at the per-GPU heads and MLP width of TP 2/4/8). The term is
       s_per_token_layer(tp) = replicated + divided_tp1 / tp
                             = (bytes_replicated + bytes_divided_tp1 / tp) / (hbm_fraction * HBM)
   with bytes the logical traffic (each input read once, each output written once; formulas in
   measure_gaps.py, BYTES) and hbm_fraction = bytes / (slope * datasheet HBM) on the measured GPU,
   so the term carries over to another GPU through its HBM bandwidth.
2. M padding: the 70B TP 1 FP8 layer GEMMs' time against m. Lines in m and in ceil(m / T) * T for
   tiles T are fitted; the verdict is the tile that explains the steps, or "no staircase within X%".
3. Sustained clocks: TFLOP/s of the first against the last windows of the back-to-back GEMM run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

FIT_MIN_M = 256
TILES = (16, 32, 64, 128, 256)
TPS = (1, 2, 4, 8)

SETS = {
    "unfused": {
        "replicated": {("plain", "add_norm"): 2, ("plain", "quant_hidden"): 2},
        "divided": {("plain", "rope"): 1, ("plain", "kv_write"): 1, ("plain", "quant_attn_out"): 1,
                    ("plain", "swiglu"): 1, ("plain", "quant_mlp"): 1},
    },
    "unfused_compiled": {
        "replicated": {("compiled", "add_norm"): 2, ("compiled", "quant_hidden"): 2},
        "divided": {("compiled", "rope"): 1, ("compiled", "kv_write"): 1, ("compiled", "quant_attn_out"): 1,
                    ("compiled", "swiglu"): 1, ("compiled", "quant_mlp"): 1},
    },
    "fused": {
        "replicated": {("compiled", "add_norm_quant"): 2},
        "divided": {("compiled", "rope_kv_write"): 1, ("compiled", "quant_attn_out"): 1,
                    ("compiled", "silu_mul_quant"): 1},
    },
    "fused_swiglu_in_gemm": {
        "replicated": {("compiled", "add_norm_quant"): 2},
        "divided": {("compiled", "rope_kv_write"): 1, ("compiled", "quant_attn_out"): 1},
    },
}


def lsq(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line y = a + b x; (a, b). A single point gives a line through the origin."""
    n = len(xs)
    if n == 1:
        return 0.0, ys[0] / xs[0]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def fit_curve(points: dict[int, float], bytes_per_token: float | None, hbm: float | None) -> dict:
    """Slope (per token), intercept and floor of seconds against tokens m."""
    ms = sorted(points)
    use = [m for m in ms if m >= FIT_MIN_M]
    if len(use) < 2:
        use = ms
    a, b = lsq([float(m) for m in use], [points[m] for m in use])
    frac = bytes_per_token / (b * hbm) if (hbm and bytes_per_token and b > 0) else None
    return {"slope_us_per_token": b * 1e6, "intercept_us": a * 1e6,
            "floor_us": points[ms[0]] * 1e6, "floor_m": ms[0], "fit_m": [use[0], use[-1]],
            "us_per_token_at_max_m": points[ms[-1]] / ms[-1] * 1e6,
            "bytes_per_token": bytes_per_token, "hbm_fraction": frac}


def _op_points(rec: dict) -> dict[int, float]:
    return {r["m"]: r["s"] for r in rec.get("rows", []) if r.get("s") is not None}


def part_fit(cfg: dict, ops: dict, hbm: float | None) -> dict:
    """Fit of a set's part (ops with multiplicities) in one measured config."""
    missing, pts, nbytes = [], None, 0.0
    for (kind, op), mult in ops.items():
        rec = cfg.get("ops", {}).get(kind, {}).get(op)
        p = _op_points(rec) if rec else {}
        if not p:
            missing.append(f"{kind}/{op}" + (f" ({rec['error']})" if rec and rec.get("error") else ""))
            continue
        nbytes += mult * rec["bytes_per_token"]
        pts = {m: mult * s for m, s in p.items()} if pts is None else \
            {m: pts[m] + mult * p[m] for m in pts if m in p}
    if missing:
        return {"error": "missing: " + "; ".join(missing)}
    if not pts:
        return {"error": "no common m"}
    return fit_curve(pts, nbytes, hbm)


def nongemm_terms(report: dict, hbm: float | None) -> dict:
    sec = report.get("nongemm", {})
    configs = sec.get("configs", {})
    if not configs:                                 # the section failed (or never ran) before any config
        return {"error": sec.get("error", "not measured")}
    out = {}
    for shape in sorted({c["shape"] for c in configs.values()}):
        by_tp = {c["tp"]: c for c in configs.values() if c["shape"] == shape and "ops" in c}
        if 1 not in by_tp:
            why = [c.get("error") or c.get("skipped") for c in configs.values()
                   if c["shape"] == shape and c["tp"] == 1 and "ops" not in c]
            out[shape] = {"error": "no TP 1 config measured" + (f" ({why[0]})" if why and why[0] else "")}
            continue
        sets = {}
        for set_name, parts in SETS.items():
            rep = part_fit(by_tp[1], parts["replicated"], hbm)
            div = {tp: part_fit(c, parts["divided"], hbm) for tp, c in sorted(by_tp.items())}
            entry = {"replicated": rep, "divided": {str(tp): f for tp, f in div.items()}}
            d1 = div[1]
            if "error" not in rep and "error" not in d1:
                r_s, d_s = rep["slope_us_per_token"] * 1e-6, d1["slope_us_per_token"] * 1e-6
                r_b, d_b = rep["bytes_per_token"], d1["bytes_per_token"]
                total = r_s + d_s
                entry["term"] = {
                    "replicated_s_per_token_layer": r_s,
                    "divided_tp1_s_per_token_layer": d_s,
                    "bytes_replicated_per_token_layer": r_b,
                    "bytes_divided_tp1_per_token_layer": d_b,
                    "hbm_fraction_replicated": rep["hbm_fraction"],
                    "hbm_fraction_divided": d1["hbm_fraction"],
                    "hbm_fraction": (r_b + d_b) / (total * hbm) if hbm and total > 0 else None,
                    "floor_s_per_layer_tp1": (rep["floor_us"] + d1["floor_us"]) * 1e-6,
                    "floor_m": rep["floor_m"],
                }
                per_tp = {}
                for tp in TPS:
                    row = {"model_s_per_token_layer": r_s + d_s / tp}
                    f = div.get(tp)
                    if f and "error" not in f:
                        row["measured_s_per_token_layer"] = r_s + f["slope_us_per_token"] * 1e-6
                        row["measured_floor_s_per_layer"] = (rep["floor_us"] + f["floor_us"]) * 1e-6
                    per_tp[str(tp)] = row
                entry["per_tp"] = per_tp
            sets[set_name] = entry
        per_op = {name: {f"{kind}/{op}": fit_curve(_op_points(rec), rec["bytes_per_token"], hbm)
                         for kind, ops in c["ops"].items() for op, rec in ops.items() if _op_points(rec)}
                  for name, c in configs.items() if c["shape"] == shape and "ops" in c}
        out[shape] = {"sets": sets, "per_op": per_op}
    return out


def staircase(points: dict[int, float], tol: float) -> dict:
    """Is t(m) a line in m, or a line in m rounded up to a tile?"""
    ms = sorted(points)
    ts = [points[m] for m in ms]
    if len(ms) < 3:
        return {"verdict": "too few m values", "points": len(ms)}

    def errs(xs):
        a, b = lsq([float(x) for x in xs], ts)
        e = [t / (a + b * x) - 1 for t, x in zip(ts, xs)]
        return a, b, e

    a, b, e_lin = errs(ms)
    rms = lambda e: math.sqrt(sum(x * x for x in e) / len(e))
    models = {"linear": {"rms_rel_err": rms(e_lin), "max_rel_err": max(abs(x) for x in e_lin)}}
    for tile in TILES:
        padded = [math.ceil(m / tile) * tile for m in ms]
        if padded == ms:
            continue
        _, _, e = errs(padded)
        models[f"tile_{tile}"] = {"rms_rel_err": rms(e), "max_rel_err": max(abs(x) for x in e)}
    worst = max(range(len(ms)), key=lambda i: abs(e_lin[i]))
    ratios = {}
    for m in ms:
        up = math.ceil(m / 128) * 128
        if up != m and up in points:
            ratios[str(m)] = {"t_over_t_ceil128": points[m] / points[up], "linear_would_be": (a + b * m) / (a + b * up)}
    lin = models["linear"]
    tiles = {k: v for k, v in models.items() if k != "linear"}
    best = min(tiles, key=lambda k: tiles[k]["rms_rel_err"]) if tiles else None
    if lin["max_rel_err"] <= tol:
        verdict = f"no staircase within {tol:.0%} (largest deviation from a line {lin['max_rel_err']:.1%})"
        tile = None
    elif best and tiles[best]["rms_rel_err"] < 0.5 * lin["rms_rel_err"]:
        tile = int(best.split("_")[1])
        verdict = (f"staircase of {tile} rows: time follows ceil(m/{tile})*{tile} "
                   f"(rms error {tiles[best]['rms_rel_err']:.1%} against {lin['rms_rel_err']:.1%} for a line)")
    else:
        tile = None
        verdict = (f"irregular, not a tile staircase: up to {lin['max_rel_err']:.1%} off a line "
                   f"(at m={ms[worst]}), best tile {best} rms {tiles[best]['rms_rel_err']:.1%}" if best else
                   f"irregular: up to {lin['max_rel_err']:.1%} off a line")
    pad_cost = {str(m): points[m] / (a + b * m) - 1 for m in (450, 794) if m in points}
    return {"verdict": verdict, "tile": tile, "models": models, "ratios": ratios,
            "linear_fit": {"intercept_us": a * 1e6, "us_per_row": b * 1e6},
            "worst_m": ms[worst], "excess_over_line": pad_cost}


def mpad_terms(report: dict, tol: float) -> dict:
    mp = report.get("mpad", {})
    if "rows" not in mp:
        return {"error": mp.get("error", "not measured")}
    out = {}
    layer = {r["m"]: r["sum_s"] for r in mp.get("layer", []) if r.get("sum_s")}
    if layer:
        out["layer"] = staircase(layer, tol)
    for g in sorted({r["gemm"] for r in mp["rows"]}):
        pts = {r["m"]: r["s"] for r in mp["rows"] if r["gemm"] == g and r.get("s")}
        out[g] = staircase(pts, tol)
    return out


def sustain_terms(report: dict) -> dict:
    su = report.get("sustain", {})
    w = [x["tflops"] for x in su.get("windows", []) if x.get("tflops")]
    if not w:
        return {"error": su.get("error", "no windows")}
    k = 2 if len(w) >= 4 else 1
    first, last = sum(w[:k]) / k, sum(w[-k:]) / k
    out = {"windows": len(w), "tflops_first": first, "tflops_last": last, "tflops_min": min(w),
           "tflops_max": max(w), "drop_pct": 100 * (1 - last / first)}
    smp = [s for s in su.get("samples", []) if s]
    clocks = [s["clocks_sm"] for s in smp if s.get("clocks_sm") is not None]
    if clocks:
        kc = 2 if len(clocks) >= 4 else 1
        c0, c1 = sum(clocks[:kc]) / kc, sum(clocks[-kc:]) / kc
        out.update(clock_first_mhz=c0, clock_last_mhz=c1, clock_min_mhz=min(clocks),
                   clock_drop_pct=100 * (1 - c1 / c0),
                   clock_max_mhz=next((s["clocks_max_sm"] for s in smp if s.get("clocks_max_sm")), None))
    power = [s["power_draw"] for s in smp if s.get("power_draw") is not None]
    if power:
        out.update(power_mean_w=sum(power) / len(power), power_max_w=max(power),
                   power_limit_w=next((s["power_limit"] for s in smp if s.get("power_limit")), None))
    temps = [s["temperature_gpu"] for s in smp if s.get("temperature_gpu") is not None]
    if temps:
        out["temperature_max_c"] = max(temps)
    return out


def derive(report: dict, tol: float = 0.03, hbm: float | None = None) -> dict:
    hbm = hbm or (report.get("datasheet") or {}).get("hbm_bytes_per_s")
    out = {"device": report.get("device"), "hbm_bytes_per_s": hbm, "smoke": report.get("smoke", False)}
    for name, fn in (("nongemm", lambda: nongemm_terms(report, hbm)), ("mpad", lambda: mpad_terms(report, tol)),
                     ("sustain", lambda: sustain_terms(report))):
        try:
            out[name] = fn()
        except Exception as e:                                  # report what can be derived
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return out


def _f(x, fmt="{:.3f}"):
    return "n/a" if x is None else fmt.format(x)


def summary_lines(d: dict) -> list[str]:
    lines = [f"device {d.get('device')}, HBM datasheet {_f(d.get('hbm_bytes_per_s'), '{:.3g}')} B/s"
             + ("  [SMOKE: numbers mean nothing]" if d.get("smoke") else "")]
    ng = d.get("nongemm", {})
    if "error" in ng:
        lines.append(f"non-GEMM: {ng['error']}")
    for shape, s in ng.items():
        if shape == "error":
            continue
        if not isinstance(s, dict) or "sets" not in s:
            lines.append(f"non-GEMM {shape}: {s.get('error') if isinstance(s, dict) else s}")
            continue
        fm = next((e["term"]["floor_m"] for e in s["sets"].values() if e.get("term")), None)
        lines.append(f"non-GEMM per token per layer, {shape} (us; replicated + divided/TP; floor per layer at m={fm}):")
        for set_name, e in s["sets"].items():
            t = e.get("term")
            if not t:
                errs = [x.get("error") for x in [e["replicated"], *e["divided"].values()] if "error" in x]
                lines.append(f"  {set_name:21s} {errs[0] if errs else 'n/a'}")
                continue
            tps = "  ".join(
                f"tp{tp} {_f(r['model_s_per_token_layer'] * 1e6)}"
                + (f" (meas {_f(r['measured_s_per_token_layer'] * 1e6)})" if "measured_s_per_token_layer" in r else "")
                for tp, r in e["per_tp"].items())
            lines.append(f"  {set_name:21s} {_f(t['replicated_s_per_token_layer'] * 1e6)} + "
                         f"{_f(t['divided_tp1_s_per_token_layer'] * 1e6)}/TP; "
                         f"{(t['bytes_replicated_per_token_layer'] + t['bytes_divided_tp1_per_token_layer']) / 1024:.0f} KiB/token "
                         f"at {_f(t['hbm_fraction'], '{:.2f}')} of HBM; floor {_f(t['floor_s_per_layer_tp1'] * 1e6, '{:.1f}')} us")
            lines.append(f"  {'':21s} {tps}")
    mp = d.get("mpad", {})
    if "error" in mp:
        lines.append(f"M padding: {mp['error']}")
    for g, s in mp.items():
        if isinstance(s, dict) and "verdict" in s:
            extra = ", ".join(f"m={m} {v:+.1%} over the line" for m, v in s.get("excess_over_line", {}).items())
            lines.append(f"M padding, {g}: {s['verdict']}" + (f"; {extra}" if extra else ""))
    su = d.get("sustain", {})
    if "error" in su:
        lines.append(f"sustained: {su['error']}")
    elif su:
        lines.append(f"sustained: {su['windows']} windows, {su['tflops_first']:.4g} -> {su['tflops_last']:.4g} TFLOP/s "
                     f"(drop {su['drop_pct']:.1f}%); SM clock {_f(su.get('clock_first_mhz'), '{:.0f}')} -> "
                     f"{_f(su.get('clock_last_mhz'), '{:.0f}')} MHz (max {_f(su.get('clock_max_mhz'), '{:.0f}')}); "
                     f"power mean {_f(su.get('power_mean_w'), '{:.0f}')} W of {_f(su.get('power_limit_w'), '{:.0f}')} W")
    return lines


SECTIONS = ("nongemm", "mpad", "sustain")


def load_report(path: str) -> dict:
    """The JSON measure_gaps.py wrote; a ValueError naming the file and what is wrong otherwise."""
    with open(path) as f:
        try:
            report = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(report, dict):
        raise ValueError(f"{path}: a JSON {type(report).__name__}, not measure_gaps.py's report (an object)")
    if not any(k in report for k in SECTIONS):
        raise ValueError(f"{path}: none of the sections {', '.join(SECTIONS)} (not a measure_gaps.py report, "
                         "or its run stopped before the first section)")
    bad = [k for k in SECTIONS if k in report and not isinstance(report[k], dict)]
    if bad:
        raise ValueError(f"{path}: section {', '.join(bad)} is not a JSON object")
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("gaps", help="JSON written by measure_gaps.py")
    p.add_argument("--out", help="write the derived terms here (JSON)")
    p.add_argument("--tol", type=float, default=0.03, help="largest deviation from a line still 'no staircase'")
    p.add_argument("--hbm", type=float, help="HBM bytes/s to use instead of the file's datasheet value")
    args = p.parse_args()
    try:
        report = load_report(args.gaps)
    except ValueError as e:
        sys.exit(f"derive_gap_terms.py: {e}")
    d = derive(report, tol=args.tol, hbm=args.hbm)
    print("\n".join(summary_lines(d)))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(d, f, indent=1)


if __name__ == "__main__":
    main()
