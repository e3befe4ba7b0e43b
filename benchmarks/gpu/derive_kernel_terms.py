#!/usr/bin/env python3
"""Derive per-GPU efficiency terms for the step model from measured kernel tables.

Data source
-----------
The measured tables ship inside the Apache-2.0 wheel ``aiconfigurator-core``
(tested with 0.12.0), under ``aiconfigurator_core/systems/``:

* ``<gpu>.yaml``                                  -- spec-sheet peaks (FLOP/s, HBM bandwidth, ...)
* ``data/<gpu>/gemm/<backend>/<ver>/gemm_perf.parquet``
* ``data/<gpu>/comm/nccl/<ver>/nccl_perf.parquet``
* ``data/<gpu>/comm/<backend>/<ver>/custom_allreduce_perf.parquet``
* ``data/<gpu>/attention/<backend>/<ver>/{context,generation}_attention_perf.parquet``

Only the *data* is read (parquet via pandas/pyarrow, yaml via PyYAML); no code
from the package is imported or executed.  The package is located through
``importlib.util.find_spec("aiconfigurator_core")`` (so it must be installed,
e.g. as an optional extra), or given explicitly with ``--data-dir``.

Units in the tables (checked against the public collector scripts of
ai-dynamo/aiconfigurator and against physical plausibility):

* ``latency`` is in milliseconds (converted to seconds here);
* ``message_size`` in the NCCL and custom all-reduce tables counts *elements*
  (the NCCL collector stores ``bytes // bytes_per_element``; the custom
  all-reduce collector allocates a tensor of ``message_size`` elements), so
  message bytes = 2 * message_size for half / bfloat16;
* attention ``num_heads`` / ``num_key_value_heads`` are heads *per GPU*;
  generation rows have ``isl == 1`` and ``step`` = cached KV tokens.

What is derived (per GPU, per backend, see ``--help`` and SUMMARY.md)
--------------------------------------------------------------------
1. GEMM: summed time of the four dense GEMMs of one Llama-3 decoder layer
   (QKV, o_proj, gate_up, down; Megatron split over tp) for every quantization
   mode in the table; achieved fraction of dense peak at m = 4096..16384
   ("plateau MFU") and achieved weight-streaming bandwidth fraction at
   m = 1..32, plus the whole curve.
2. All-reduce: raw times, a fit ``t = alpha + bytes / beta`` (beta in
   algorithm bandwidth = message bytes / time) and times at the message sizes
   of real decoder layers.
3. Attention: context-attention achieved FLOP fraction and generation
   (decode) attention achieved KV-read bandwidth fraction.
4. Per-step constants found in the system yamls / backend model code.

Interpolation (GEMM)
--------------------
The GEMM table is (close to) a full grid over m (74 values, 1..32768),
n and k (~22 values, 32..65536).  ``log(latency)`` is interpolated linearly in
``log(m)``, ``log(n)``, ``log(k)`` (piecewise power law): 1-D over m along the
four (n, k) grid corners that bracket the target, then bilinear over
(log n, log k).  Exact grid points are returned unchanged.  Targets beyond the
largest grid value of an axis are split into ``c`` equal slices
(``t = c * t(x / c)``) and flagged; this only happens for the 405B tp=1
gate_up GEMM (N = 106496 > 65536) and for m = 16384 on tables that stop at
m = 8192 (a100_sxm TRT-LLM 1.0.0).

Usage
-----
    python benchmarks/derive_kernel_terms.py                      # installed package
    python benchmarks/derive_kernel_terms.py --data-dir /path/to/aiconfigurator_core/systems \
        --out kernel_terms.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

# ---------------------------------------------------------------------------
# Constants: models, sweeps, dtype properties
# ---------------------------------------------------------------------------

MODELS = {
    # hidden, intermediate, q heads, kv heads, head_dim, layers
    "llama3_8b": dict(hidden=4096, inter=14336, q=32, kv=8, hd=128, layers=32),
    "llama3_70b": dict(hidden=8192, inter=28672, q=64, kv=8, hd=128, layers=80),
    "llama3.1_405b": dict(hidden=16384, inter=53248, q=128, kv=8, hd=128, layers=126),
}
TPS = (1, 2, 4, 8)
GEMM_M = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
PLATEAU_M = (4096, 8192, 16384)
STREAM_M = (1, 2, 4, 8, 16, 32)

# Bytes per weight element (scale factors included where they are a fixed
# per-element overhead) and the system-yaml peak used as "dense peak".
QUANT_MODES = {
    "bfloat16": dict(bytes=2.0, peak="bfloat16_tc_flops", note="BF16 weights and activations"),
    "fp8": dict(bytes=1.0, peak="fp8_tc_flops", note="FP8 per-tensor scaled weights+activations"),
    "fp8_block": dict(bytes=1.0 + 4.0 / (128 * 128), peak="fp8_tc_flops",
                      note="FP8 with 128x128 block scales (DeepSeek-style)"),
    "nvfp4": dict(bytes=0.5 + 1.0 / 16, peak="fp4_tc_flops", note="NVFP4 weights, FP8 scale per 16 elements"),
    "sq": dict(bytes=1.0, peak="int8_tc_flops", note="INT8 SmoothQuant (W8A8)"),
    "int8_wo": dict(bytes=1.0, peak="bfloat16_tc_flops", note="INT8 weight-only, BF16 compute"),
    "int4_wo": dict(bytes=0.5, peak="bfloat16_tc_flops", note="INT4 weight-only, BF16 compute"),
}

AR_FIT_MIN, AR_FIT_MAX = 16 * 1024, 64 * 1024 * 1024  # bytes, fit window
AR_RAW_MIN, AR_RAW_MAX = 8 * 1024, 256 * 1024 * 1024  # bytes, reported curve
AR_TPS = (2, 4, 8)
AR_HIDDEN = (4096, 8192, 16384)
AR_TOKENS = (1, 64, 256, 1024, 8192)

CTX_ISL = (512, 1024, 2048, 4096, 8192, 16384, 32768)
GEN_BATCH = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GEN_CTX = (512, 1024, 2048, 4096, 8192, 16384, 32768)
GEN_PLATEAU_BYTES = 128 * 2**20
GEN_FIT_MIN_BYTES = 16 * 2**20
BACKENDS = ("trtllm", "vllm", "sglang")
DEFAULT_ATTN_KERNEL = {"trtllm": "torch_flow"}  # TRT-LLM's default attention backend


# ---------------------------------------------------------------------------
# Locating data and choosing versions
# ---------------------------------------------------------------------------

def default_systems_dir() -> Path:
    """Return ``aiconfigurator_core/systems`` of the installed package (not imported)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is not None:
        for loc in spec.submodule_search_locations or []:
            cand = Path(loc) / "systems"
            if cand.is_dir():
                return cand
    raise SystemExit(
        "aiconfigurator_core is not installed; install the optional extra "
        "(pip install aiconfigurator-core) or pass --data-dir <.../aiconfigurator_core/systems>"
    )


def resolve_systems_dir(arg: str | None) -> Path:
    if arg is None:
        return default_systems_dir()
    p = Path(arg).expanduser().resolve()
    if (p / "systems" / "data").is_dir():  # package root given
        return p / "systems"
    if p.name == "data" and not (p / "data").is_dir():  # data dir given
        return p.parent
    if (p / "data").is_dir():
        return p
    raise SystemExit(f"{p} does not look like aiconfigurator_core/systems (no data/ folder)")


def version_key(v: str):
    """Sort key for version folder names: 1.3.0rc20 < 1.3.0 < 1.3.0.post1."""
    m = re.match(r"^(\d+(?:\.\d+)*)(.*)$", v)
    if not m:
        return ((), 0, 0, v)
    nums = tuple(int(x) for x in m.group(1).split("."))
    rest = m.group(2).lstrip(".")
    sm = re.match(r"([a-z]+)(\d*)", rest)
    if not rest:
        stage, num = 1, 0
    elif sm:
        tag, num = sm.group(1), int(sm.group(2) or 0)
        stage = {"dev": -1, "a": 0, "b": 0, "rc": 0, "post": 2}.get(tag, 0)
    else:
        stage, num = 0, 0
    return (nums, stage, num, v)


def load_query_versions(systems: Path) -> dict:
    f = systems / "query_versions.yaml"
    if not f.is_file():
        return {}
    return yaml.safe_load(f.read_text()) or {}


def current_version(qv: dict, gpu: str, backend: str) -> str | None:
    ov = ((qv.get("overrides") or {}).get(gpu) or {}).get(backend)
    if ov and ov.get("current"):
        return str(ov["current"])
    d = (qv.get("defaults") or {}).get(backend) or {}
    return str(d["current"]) if d.get("current") else None


def pick_version(family_dir: Path, filename: str, preferred: str | None):
    """Choose the version folder holding ``filename``.

    Preference: the package's queryable ``current`` version; else the newest
    older version that has the table (the package's backward fill); else the
    newest version that has it.  Returns (version, path, all_versions_with_table).
    """
    if not family_dir.is_dir():
        return None, None, []
    have = sorted((d.name for d in family_dir.iterdir() if (d / filename).is_file()), key=version_key)
    if not have:
        return None, None, []
    if preferred in have:
        v = preferred
    elif preferred is not None and any(version_key(x) < version_key(preferred) for x in have):
        v = [x for x in have if version_key(x) < version_key(preferred)][-1]
    else:
        v = have[-1]
    return v, family_dir / v / filename, have


def rel(path: Path, systems: Path) -> str:
    try:
        return "systems/" + str(path.relative_to(systems))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------
# Interpolation helpers
# ---------------------------------------------------------------------------

def _bracket(grid: np.ndarray, x: float):
    """Indices and weight (in log space) of the grid interval containing x."""
    if x <= grid[0]:
        return 0, 0, 0.0
    if x >= grid[-1]:
        n = len(grid) - 1
        return n, n, 0.0
    hi = int(np.searchsorted(grid, x))
    lo = hi - 1
    if grid[hi] == x:
        return hi, hi, 0.0
    w = (math.log(x) - math.log(grid[lo])) / (math.log(grid[hi]) - math.log(grid[lo]))
    return lo, hi, w


def loglog_interp(xs: np.ndarray, ys: np.ndarray, x: float) -> tuple[float, bool]:
    """Piecewise power-law interpolation of y(x); extrapolates from the end segments.

    Returns (value, extrapolated?)."""
    order = np.argsort(xs)
    lx, ly = np.log(xs[order]), np.log(ys[order])
    t = math.log(x)
    if lx[0] <= t <= lx[-1]:
        return float(np.exp(np.interp(t, lx, ly))), False
    if len(lx) < 2:
        return float(np.exp(ly[0])), True
    i, j = (0, 1) if t < lx[0] else (-2, -1)
    slope = (ly[j] - ly[i]) / (lx[j] - lx[i])
    return float(np.exp(ly[j] + slope * (t - lx[j]))), True


class GemmTable:
    """Dense (m, n, k) -> latency grid for one quantization mode."""

    def __init__(self, df: pd.DataFrame):
        g = df.groupby(["m", "n", "k"], as_index=False)["latency"].min()  # fastest kernel if duplicated
        self.ms = np.array(sorted(g.m.unique()), dtype=float)
        self.ns = np.array(sorted(g.n.unique()), dtype=float)
        self.ks = np.array(sorted(g.k.unique()), dtype=float)
        self.lat = np.full((len(self.ms), len(self.ns), len(self.ks)), np.nan)
        mi = np.searchsorted(self.ms, g.m.to_numpy(float))
        ni = np.searchsorted(self.ns, g.n.to_numpy(float))
        ki = np.searchsorted(self.ks, g.k.to_numpy(float))
        self.lat[mi, ni, ki] = g.latency.to_numpy(float) * 1e-3  # ms -> s
        self.kernel_sources = sorted(df.kernel_source.unique().tolist())

    def time_s(self, m: float, n: float, k: float):
        """Interpolated latency (s) of an (m x k) @ (k x n) GEMM; returns (t, flags)."""
        flags = []
        scale = 1.0
        coords = {}
        for name, x, grid in (("m", m, self.ms), ("n", n, self.ns), ("k", k, self.ks)):
            if x > grid[-1]:
                c = math.ceil(x / grid[-1])
                scale *= c
                x = x / c
                flags.append(f"{name}_split_x{c}")
            if x < grid[0]:
                flags.append(f"{name}_below_grid")
            coords[name] = x
        m, n, k = coords["m"], coords["n"], coords["k"]
        n0, n1, wn = _bracket(self.ns, n)
        k0, k1, wk = _bracket(self.ks, k)
        acc, wsum = 0.0, 0.0
        for ni, w_n in ((n0, 1 - wn), (n1, wn)):
            for ki, w_k in ((k0, 1 - wk), (k1, wk)):
                w = w_n * w_k
                if w == 0.0:
                    continue
                col = self.lat[:, ni, ki]
                ok = np.isfinite(col)
                if ok.sum() < 2:
                    flags.append("missing_corner")
                    continue
                t, extrap = loglog_interp(self.ms[ok], col[ok], m)
                if extrap:
                    flags.append("m_extrapolated")
                acc += w * math.log(t)
                wsum += w
        if wsum == 0.0:
            return float("nan"), flags + ["no_data"]
        return scale * math.exp(acc / wsum), sorted(set(flags))


def layer_gemms(cfg: dict, tp: int):
    """(name, N, K) of the four dense GEMMs of one decoder layer on one of tp GPUs."""
    hd = cfg["hd"]
    return [
        ("qkv", (cfg["q"] + 2 * cfg["kv"]) * hd // tp, cfg["hidden"]),  # column parallel
        ("o_proj", cfg["hidden"], cfg["q"] * hd // tp),  # row parallel
        ("gate_up", 2 * cfg["inter"] // tp, cfg["hidden"]),  # column parallel
        ("down", cfg["hidden"], cfg["inter"] // tp),  # row parallel
    ]


# ---------------------------------------------------------------------------
# 1. GEMM
# ---------------------------------------------------------------------------

def derive_gemm(path: Path, spec: dict) -> dict:
    df = pd.read_parquet(path)
    out = {"modes": {}}
    for mode, g in df.groupby("gemm_dtype"):
        info = QUANT_MODES.get(mode)
        if info is None:
            out["modes"][mode] = {"skipped": "unknown quantization mode"}
            continue
        table = GemmTable(g)
        peak = spec.get(info["peak"])
        mem_bw = spec["mem_bw"]
        mode_out = {
            "kernel_sources": table.kernel_sources,
            "description": info["note"],
            "bytes_per_weight": info["bytes"],
            "peak_key": info["peak"],
            "peak_flops": peak,
            "grid": {"m": [int(table.ms[0]), int(table.ms[-1]), len(table.ms)],
                     "n": [int(x) for x in table.ns], "k": [int(x) for x in table.ks]},
            "models": {},
        }
        for mname, cfg in MODELS.items():
            per_tp = {}
            for tp in TPS:
                shapes = layer_gemms(cfg, tp)
                params = sum(n * k for _, n, k in shapes)
                wbytes = params * info["bytes"]
                times, flags = [], set()
                for m in GEMM_M:
                    t = 0.0
                    for _, n, k in shapes:
                        ti, fl = table.time_s(m, n, k)
                        t += ti
                        flags.update(fl)
                    times.append(t)
                times = np.array(times)
                mfu = (2.0 * np.array(GEMM_M) * params / times / peak) if peak else None
                bwf = wbytes / times / mem_bw
                sel_p = [GEMM_M.index(m) for m in PLATEAU_M]
                sel_s = [GEMM_M.index(m) for m in STREAM_M]
                per_tp[f"tp{tp}"] = {
                    "gemms_NK": {name: [n, k] for name, n, k in shapes},
                    "params_per_gpu": params,
                    "weight_bytes_per_gpu": wbytes,
                    "plateau_mfu": float(np.mean(mfu[sel_p])) if mfu is not None else None,
                    "plateau_mfu_by_m": ({str(GEMM_M[i]): round(float(mfu[i]), 4) for i in sel_p}
                                         if mfu is not None else None),
                    "weight_stream_bw_frac": float(np.mean(bwf[sel_s])),
                    "weight_stream_bw_frac_by_m": {str(GEMM_M[i]): round(float(bwf[i]), 4) for i in sel_s},
                    "curve": {
                        "m": list(GEMM_M),
                        "time_us": [round(float(x) * 1e6, 3) for x in times],
                        "mfu": [round(float(x), 4) for x in mfu] if mfu is not None else None,
                        "weight_bw_frac": [round(float(x), 4) for x in bwf],
                    },
                    "flags": sorted(flags | ({"bw_frac_above_1_l2_resident_weights"} if bwf.max() > 1.0 else set())),
                }
            mode_out["models"][mname] = per_tp
        out["modes"][mode] = mode_out
    return out


# ---------------------------------------------------------------------------
# 2. All-reduce
# ---------------------------------------------------------------------------

def _rel_lsq(b: np.ndarray, y: np.ndarray):
    """Least squares for y ~ alpha + b * inv_beta with weights 1/y^2 (relative error).

    Falls back to a pure-bandwidth (alpha=0) or pure-latency (1/beta=0) model if the
    unconstrained solution has a negative term.  Returns (alpha, inv_beta)."""
    a = np.stack([1.0 / y, b / y], axis=1)
    (alpha, inv_beta), *_ = np.linalg.lstsq(a, np.ones_like(y), rcond=None)
    if alpha < 0:
        alpha, inv_beta = 0.0, float(np.sum(b / y) / np.sum((b / y) ** 2))
    if inv_beta < 0:
        alpha, inv_beta = float(1.0 / np.mean(1.0 / y)), 0.0
    return float(alpha), float(inv_beta)


def _fit_report(b, y, alpha, inv_beta) -> dict:
    rel_err = np.abs(alpha + b * inv_beta - y) / y
    return {"alpha_s": alpha, "beta_Bps": (1.0 / inv_beta) if inv_beta > 0 else None,
            "max_rel_err": round(float(rel_err.max()), 4), "median_rel_err": round(float(np.median(rel_err)), 4),
            "n_points": int(len(b)), "window_bytes": [int(b.min()), int(b.max())]}


def fit_alpha_beta(nbytes: np.ndarray, t: np.ndarray) -> dict:
    """Fit t = alpha + bytes/beta on 16 KiB..64 MiB minimising the *relative* error.

    Plain least squares on t would be dominated by the largest messages and leave
    alpha essentially undetermined; weighting by 1/t^2 gives every size in the
    window equal say.  A single line cannot follow NCCL/custom-kernel protocol
    switches, so a two-segment fit is reported as well: the breakpoint (a grid
    size) is chosen to minimise the worst relative error, each segment fitted the
    same way (>= 3 points per segment)."""
    sel = (nbytes >= AR_FIT_MIN) & (nbytes <= AR_FIT_MAX)
    b, y = nbytes[sel].astype(float), t[sel].astype(float)
    if len(b) < 3:
        return {"single": None, "two_segment": None}
    single = _fit_report(b, y, *_rel_lsq(b, y))
    best = None
    for i in range(3, len(b) - 2):  # segments b[:i] and b[i-1:] share the breakpoint
        lo, hi = _rel_lsq(b[:i], y[:i]), _rel_lsq(b[i - 1:], y[i - 1:])
        err = max(np.max(np.abs(lo[0] + b[:i] * lo[1] - y[:i]) / y[:i]),
                  np.max(np.abs(hi[0] + b[i - 1:] * hi[1] - y[i - 1:]) / y[i - 1:]))
        if best is None or err < best[0]:
            best = (err, i, lo, hi)
    two = None
    if best is not None:
        _, i, lo, hi = best
        two = {"break_bytes": int(b[i - 1]),
               "small": _fit_report(b[:i], y[:i], *lo),
               "large": _fit_report(b[i - 1:], y[i - 1:], *hi)}
    return {"single": single, "two_segment": two}


def summarize_allreduce(nbytes: np.ndarray, t: np.ndarray, tp: int) -> dict:
    order = np.argsort(nbytes)
    nbytes, t = nbytes[order], t[order]
    fit = fit_alpha_beta(nbytes, t)
    raw = {str(int(b)): round(float(x) * 1e6, 3) for b, x in zip(nbytes, t) if AR_RAW_MIN <= b <= AR_RAW_MAX}
    small = t[nbytes <= 64 * 1024]
    big_i = int(np.argmax(np.where(nbytes <= AR_RAW_MAX, nbytes, -1)))
    algbw = float(nbytes[big_i] / t[big_i])
    at_layers = {}
    for h in AR_HIDDEN:
        for m in AR_TOKENS:
            b = h * 2 * m
            val, ex = loglog_interp(nbytes, t, b)
            at_layers[f"h{h}_m{m}"] = {"bytes": b, "time_us": round(val * 1e6, 3), "extrapolated": ex}
    return {
        "fit": fit,
        "piecewise": {
            "latency_floor_s": float(small.min()) if len(small) else None,
            "algbw_at_largest_Bps": algbw,
            "largest_bytes": int(nbytes[big_i]),
            "busbw_at_largest_Bps": algbw * 2 * (tp - 1) / tp,
        },
        "raw_time_us_by_bytes": raw,
        "time_at_layer_messages": at_layers,
    }


def derive_nccl(path: Path) -> dict:
    df = pd.read_parquet(path)
    df = df[(df.op_name == "all_reduce") & (df.nccl_dtype == "half")]
    out = {}
    for tp, g in df.groupby("num_gpus"):
        s = g.groupby("message_size").latency.median()
        nbytes = s.index.to_numpy(float) * 2  # half: 2 bytes / element
        out[f"tp{int(tp)}"] = summarize_allreduce(nbytes, s.to_numpy(float) * 1e-3, int(tp))
        out[f"tp{int(tp)}"]["repeats_per_size"] = int(g.groupby("message_size").size().max())
    return out


def derive_custom_ar(path: Path) -> dict:
    df = pd.read_parquet(path)
    impl_col = next((c for c in ("implementation", "backend") if c in df.columns), None)
    key = df[impl_col] if impl_col else df.kernel_source
    out = {}
    for impl in sorted(key.unique()):
        g0 = df[key == impl]
        per = {"kernel_source": sorted(g0.kernel_source.unique().tolist()),
               "dtype": sorted(g0.allreduce_dtype.unique().tolist())}
        for tp, g in g0.groupby("num_gpus"):
            s = g.groupby("message_size").latency.median()
            nbytes = s.index.to_numpy(float) * 2  # bfloat16 elements -> bytes
            per[f"tp{int(tp)}"] = summarize_allreduce(nbytes, s.to_numpy(float) * 1e-3, int(tp))
        out[str(impl)] = per
    return out


# ---------------------------------------------------------------------------
# 3. Attention
# ---------------------------------------------------------------------------

def head_configs():
    """{(q_per_gpu, kv_per_gpu): [model@tp, ...]} for the three Llama-3 models."""
    cfgs = {}
    for mname, cfg in MODELS.items():
        for tp in TPS:
            cfgs.setdefault((cfg["q"] // tp, max(cfg["kv"] // tp, 1)), []).append(f"{mname}@tp{tp}")
    return cfgs


def _base_filter(df: pd.DataFrame) -> pd.DataFrame:
    sel = df.head_dim == 128
    if "window_size" in df:
        sel &= df.window_size == 0
    if "beam_width" in df:
        sel &= df.beam_width == 1
    return df[sel]


def derive_context_attention(path: Path, spec: dict, backend: str) -> dict:
    df = _base_filter(pd.read_parquet(path))
    df = df[df.step == 0] if "step" in df else df
    out = {}
    for ks, dk in df.groupby("kernel_source"):
        per_mode = {}
        for attn_dtype, kv_dtype, peak_key in (("bfloat16", "bfloat16", "bfloat16_tc_flops"),
                                               ("fp8", "fp8", "fp8_tc_flops")):
            d = dk[(dk.attn_dtype == attn_dtype) & (dk.kv_cache_dtype == kv_dtype)]
            peak = spec.get(peak_key)
            if d.empty or not peak:
                continue
            cfg_out = {}
            for (q, kv), users in head_configs().items():
                g = d[(d.num_heads == q) & (d.num_key_value_heads == kv)]
                if g.empty:
                    cfg_out[f"q{q}_kv{kv}"] = {"used_by": users, "missing": True}
                    continue
                g = g.groupby(["isl", "batch_size"], as_index=False).latency.median()
                g["time_s"] = g.latency * 1e-3
                # Causal prefill: QK^T and PV each 2*s*s*d per head, halved by the mask.
                g["flops"] = 2.0 * g.batch_size * q * g.isl.astype(float) ** 2 * 128
                g["frac"] = g.flops / g.time_s / peak
                curve, plateau_pts = [], []
                for s in CTX_ISL:
                    gs = g[g.isl == s]
                    if gs.empty:
                        continue
                    for _, r in gs.sort_values("batch_size").iterrows():
                        curve.append([int(s), int(r.batch_size), round(r.time_s * 1e6, 3), round(r.frac, 4)])
                    if s >= 4096:
                        plateau_pts.append(float(gs.sort_values("batch_size").frac.iloc[-1]))
                b1 = {str(int(r.isl)): round(r.frac, 4) for _, r in g[(g.batch_size == 1) & g.isl.isin(CTX_ISL)].iterrows()}
                cfg_out[f"q{q}_kv{kv}"] = {
                    "used_by": users,
                    "plateau_frac": float(np.median(plateau_pts)) if plateau_pts else None,
                    "max_frac": round(float(g[g.isl >= 512].frac.max()), 4),
                    "frac_batch1_by_isl": b1,
                    "curve_isl_batch_us_frac": curve,
                    "isl_measured_max": int(g.isl.max()),
                }
            per_mode[f"attn_{attn_dtype}_kv_{kv_dtype}"] = {"peak_key": peak_key, "peak_flops": peak,
                                                             "head_configs": cfg_out}
        out[str(ks)] = per_mode
    return out


def derive_generation_attention(path: Path, spec: dict, backend: str) -> dict:
    df = _base_filter(pd.read_parquet(path))
    mem_bw = spec["mem_bw"]
    out = {}
    for ks, dk in df.groupby("kernel_source"):
        per_mode = {}
        for kv_dtype, el_bytes in (("bfloat16", 2), ("fp8", 1)):
            d = dk[(dk.kv_cache_dtype == kv_dtype) & (dk.attn_dtype == "bfloat16")]
            if d.empty:
                continue
            cfg_out = {}
            for (q, kv), users in head_configs().items():
                g = d[(d.num_heads == q) & (d.num_key_value_heads == kv)]
                if g.empty:
                    cfg_out[f"q{q}_kv{kv}"] = {"used_by": users, "missing": True}
                    continue
                g = g.groupby(["batch_size", "step"], as_index=False).latency.median()
                g["ctx"] = g.step + 1  # cached tokens + the new token
                g["time_s"] = g.latency * 1e-3
                # K and V of every cached token of every sequence read once per call.
                g["bytes"] = g.batch_size * g.ctx.astype(float) * kv * 128 * 2 * el_bytes
                g["frac"] = g.bytes / g.time_s / mem_bw
                sel = g[g.batch_size.isin(GEN_BATCH) & g.ctx.isin(GEN_CTX)]
                grid = {f"b{int(r.batch_size)}_ctx{int(r.ctx)}": [round(r.time_s * 1e6, 3), round(r.frac, 4)]
                        for _, r in sel.iterrows()}
                # Plateau: calls that move >= 128 MiB of KV (launch cost amortised).
                big = g[(g.bytes >= GEN_PLATEAU_BYTES) & (g.ctx >= 512)]
                # Fit only calls >= 16 MiB: smaller ones can stay resident in the
                # 50-128 MB L2 across back-to-back replays and read "faster than HBM".
                fitpts = g[(g.ctx >= 512) & (g.bytes >= GEN_FIT_MIN_BYTES)]
                if len(fitpts) < 3:
                    fitpts = g[g.ctx >= 512]
                alpha, inv_b = _rel_lsq(fitpts.bytes.to_numpy(float), fitpts.time_s.to_numpy(float))
                cfg_out[f"q{q}_kv{kv}"] = {
                    "used_by": users,
                    "plateau_frac": float(big.frac.median()) if not big.empty else None,
                    "plateau_n_points": int(len(big)),
                    "per_call_floor_s": float(g.time_s.min()),
                    "suspect_exceeds_hbm_peak": bool(not big.empty and big.frac.median() > 1.0),
                    "fit_t_eq_alpha_plus_bytes_over_bw": {
                        "alpha_s": alpha, "bw_frac": (1.0 / inv_b / mem_bw) if inv_b > 0 else None,
                        **{k: v for k, v in _fit_report(fitpts.bytes.to_numpy(float), fitpts.time_s.to_numpy(float),
                                                        alpha, inv_b).items() if k.endswith("rel_err")}},
                    "max_frac": round(float(sel.frac.max()), 4) if not sel.empty else None,
                    "frac_b1_ctx4096": grid.get("b1_ctx4096", [None, None])[1],
                    "frac_b8_ctx4096": grid.get("b8_ctx4096", [None, None])[1],
                    "frac_b64_ctx8192": grid.get("b64_ctx8192", [None, None])[1],
                    "frac_b256_ctx8192": grid.get("b256_ctx8192", [None, None])[1],
                    "grid_time_us_frac": grid,
                }
            per_mode[f"kv_{kv_dtype}"] = {"bytes_per_element": el_bytes, "head_configs": cfg_out}
        out[str(ks)] = per_mode
    return out


# ---------------------------------------------------------------------------
# 4. Constants / overheads
# ---------------------------------------------------------------------------

def scan_backend_overheads(systems: Path) -> list:
    """Record per-request / per-step constants that the package's backend model code adds.

    Only reports the values (a short description + number); the code is not copied."""
    found = []
    sdk = systems.parent / "sdk" / "backends"
    for f in sorted(sdk.glob("*_backend.py")) if sdk.is_dir() else []:
        text = f.read_text()
        m = re.search(r"def _prefill_dispatch_overhead_ms\(.*?\n(.*?)(?=\n    def )", text, re.S)
        if m:
            ret = re.search(r"return\s+(.+)", m.group(1))
            if ret and ret.group(1).strip() != "0.0":
                num = re.findall(r"[-+]?\d*\.\d+|\d+", ret.group(1))
                found.append({"file": f"sdk/backends/{f.name}", "name": "_prefill_dispatch_overhead_ms",
                              "meaning": "CPU dispatch overhead added once per prefill request (ms); "
                                         "expression is num_layers * value",
                              "value_ms_per_layer": float(num[-1]) if num else None})
        for const in ("ACTIVATION_OVERHEAD_FRAC", "OTHERS_OVERHEAD_FRAC", "MIN_ACTIVATION_BYTES"):
            mm = re.search(rf"^\s+{const}\s*(?::[^=]+)?=\s*([^#\n]+)", text, re.M)
            if mm:
                found.append({"file": f"sdk/backends/{f.name}", "name": const,
                              "meaning": "memory-model overhead (not latency)", "value": mm.group(1).strip()})
    return found


SYSTEM_KEYS_GPU = ("mem_bw", "mem_bw_empirical_scaling_factor", "mem_empirical_constant_latency",
                   "bfloat16_tc_flops", "fp8_tc_flops", "fp4_tc_flops", "int8_tc_flops", "mem_capacity", "sm_version")
SYSTEM_KEYS_NODE = ("num_gpus_per_node", "intra_node_bw", "inter_node_bw", "pcie_bw", "p2p_latency", "inter_rack_latency")


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def derive_gpu(systems: Path, gpu: str, sysyaml: dict, qv: dict, log) -> dict:
    spec = sysyaml.get("gpu") or {}
    node = sysyaml.get("node") or {}
    data = systems / sysyaml.get("data_dir", f"data/{gpu}")
    res = {
        "system_yaml": {"file": f"systems/{gpu}.yaml",
                        **{k: spec.get(k) for k in SYSTEM_KEYS_GPU if k in spec},
                        **{f"node.{k}": node.get(k) for k in SYSTEM_KEYS_NODE if k in node},
                        "misc.nccl_version": (sysyaml.get("misc") or {}).get("nccl_version")},
        "gemm": {}, "allreduce": {"custom": {}}, "context_attention": {}, "generation_attention": {},
    }
    if not data.is_dir() or not any(data.rglob("*.parquet")):
        res["missing"] = "no measured data in this package version"
        return res

    for backend in BACKENDS:
        pref = current_version(qv, gpu, backend)
        v, p, have = pick_version(data / "gemm" / backend, "gemm_perf.parquet", pref)
        if p is not None:
            log(f"  gemm {backend} {v}")
            res["gemm"][backend] = {"version": v, "preferred_version": pref, "versions_with_table": have,
                                    "source": rel(p, systems), **derive_gemm(p, spec)}
        v, p, have = pick_version(data / "comm" / backend, "custom_allreduce_perf.parquet", pref)
        if p is not None:
            res["allreduce"]["custom"][backend] = {"version": v, "versions_with_table": have,
                                                   "source": rel(p, systems), "impls": derive_custom_ar(p)}
        for phase, fname, fn in (("context_attention", "context_attention_perf.parquet", derive_context_attention),
                                 ("generation_attention", "generation_attention_perf.parquet",
                                  derive_generation_attention)):
            v, p, have = pick_version(data / "attention" / backend, fname, pref)
            if p is not None:
                log(f"  {phase} {backend} {v}")
                res[phase][backend] = {"version": v, "versions_with_table": have, "source": rel(p, systems),
                                       "default_kernel_source": DEFAULT_ATTN_KERNEL.get(backend),
                                       "kernels": fn(p, spec, backend)}

    # Collective-library all-reduce (nccl-tests style; oneCCL on Intel systems).
    for lib in ("nccl", "oneccl"):
        lib_dir = data / "comm" / lib
        want = (sysyaml.get("misc") or {}).get(f"{lib}_version")
        fname = f"{lib}_perf.parquet"
        if not lib_dir.is_dir():
            continue
        for vdir in sorted((d for d in lib_dir.iterdir() if (d / fname).is_file()), key=lambda d: version_key(d.name)):
            res["allreduce"].setdefault(lib, {})[vdir.name] = {
                "source": rel(vdir / fname, systems),
                "is_system_yaml_version": vdir.name == str(want),
                **derive_nccl(vdir / fname)}
    res["primary_backend"] = next((b for b in BACKENDS if b in res["gemm"]), None)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", help="aiconfigurator_core/systems directory (default: installed package)")
    ap.add_argument("--out", default="kernel_terms.json", help="output JSON path")
    ap.add_argument("--gpus", nargs="*", help="restrict to these system names (default: all)")
    ap.add_argument("--indent", type=int, default=None, help="pretty-print the JSON (default: compact)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    log = (lambda *_: None) if args.quiet else (lambda s: print(s, file=sys.stderr))

    systems = resolve_systems_dir(args.data_dir)
    qv = load_query_versions(systems)
    pkg_version = None
    for dist in systems.parent.parent.glob("aiconfigurator_core-*.dist-info"):
        pkg_version = dist.name[len("aiconfigurator_core-"):-len(".dist-info")]
    if pkg_version is None and args.data_dir is None:
        try:
            from importlib.metadata import version as _dist_version
            pkg_version = _dist_version("aiconfigurator-core")
        except Exception:  # noqa: BLE001 - metadata is optional
            pass

    result = {
        "meta": {
            "source": f"aiconfigurator-core {pkg_version or '?'} (Apache-2.0), systems/data/...",
            "systems_dir": str(systems),
            "units": {"time": "seconds unless the key says _us", "bandwidth": "bytes/s", "flops": "FLOP/s"},
            "gemm_method": "sum of QKV, o_proj, gate_up, down GEMM latencies of one decoder layer per GPU "
                           "(Megatron split); log-latency interpolated linearly in log m, log n, log k; "
                           "plateau_mfu = mean over m=4096,8192,16384 of 2*m*params/t/peak; "
                           "weight_stream_bw_frac = mean over m=1..32 of weight_bytes/t/mem_bw",
            "allreduce_method": "message bytes = 2*message_size (elements, half/bf16); repeated rows -> median; "
                                "fit t = alpha + bytes/beta on 16KiB..64MiB minimising relative error "
                                "(least squares with weights 1/t^2); beta is algorithm bandwidth",
            "attention_method": "context: causal FLOPs 2*b*q_heads*s^2*128 / t / peak, plateau = median over "
                                "isl>=4096 of the largest measured batch; generation: bytes = "
                                "b*(step+1)*kv_heads*128*2*bytes_per_elem / t / mem_bw, plateau = median over "
                                "calls reading >= 128 MiB; fit t = alpha + bytes/(bw_frac*mem_bw) on ctx>=512 calls "
                                "reading >= 16 MiB (relative least squares); heads are per GPU",
            "models": MODELS,
        },
        "query_versions": qv,
        "backend_constants": scan_backend_overheads(systems),
        "gpus": {},
    }
    for yf in sorted(systems.glob("*.yaml")):
        sysyaml = yaml.safe_load(yf.read_text()) or {}
        if not isinstance(sysyaml, dict) or "gpu" not in sysyaml or "data_dir" not in sysyaml:
            continue
        gpu = yf.stem
        if args.gpus and gpu not in args.gpus:
            continue
        log(f"{gpu}")
        result["gpus"][gpu] = derive_gpu(systems, gpu, sysyaml, qv, log)

    seps = (",", ": ") if args.indent is not None else (",", ":")
    Path(args.out).write_text(json.dumps(result, indent=args.indent, separators=seps, default=float) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
