"""Measure the three step-model gaps of tests/validation/README.md ("What to measure next") on a GPU.

    python benchmarks/gpu/measure_gaps.py --out benchmarks/gpu/gaps-h200-DATE.json   # ~3 min
    python benchmarks/gpu/measure_gaps.py --quick      # fewer m values, 10 s sustain: a first try
    python benchmarks/gpu/measure_gaps.py --smoke      # CPU, tiny shapes: proves the code paths only

1. Per-token work that is not a GEMM, per layer (Llama-70B shape at TP 1, and its TP-divided ops at
   the per-GPU heads / MLP width of TP 2/4/8; Llama-3-8B / Mixtral shape at TP 1), at 64-8192 tokens:
   residual add + RMSNorm, FP8 per-tensor quantisation of each GEMM input, RoPE, KV-cache write
   (FP8, scattered by slot into a paged cache), SwiGLU. Each op as plain torch ops ("plain"), and
   compiled with torch.compile ("compiled": each op on its own, and the fused groups add+norm+quant,
   rope+kv write, silu*mul+quant) as a proxy for an engine's kernels. All timed in CUDA graphs.
2. FP8 GEMM M-padding staircase: the four 70B TP 1 layer GEMMs (torch._scaled_mm) at m = 128..1024.
3. Sustained clocks and power: the 70B layer GEMMs back to back for --sustain-s seconds, TFLOP/s per
   window, nvidia-smi sampled every ~2 s.
The JSON is written after every section; derive_gap_terms.py turns it into step-model terms.
Random weights and activations; numbers only, nothing is checked for accuracy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import shutil
import threading
import time
import traceback
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derive_gap_terms import derive, fit_curve, summary_lines  # noqa: E402  (plain Python, no torch)

# Datasheet figures by a substring of torch.cuda.get_device_name(); first match wins.
DATASHEETS = [
    ("H100 PCIe", {"hbm_bytes_per_s": 2.0e12, "fp8_dense_flops": 1513e12}),
    ("H100 NVL", {"hbm_bytes_per_s": 3.9e12, "fp8_dense_flops": 1671e12}),
    ("H200", {"hbm_bytes_per_s": 4.8e12, "fp8_dense_flops": 1979e12}),
    ("H100", {"hbm_bytes_per_s": 3.35e12, "fp8_dense_flops": 1979e12}),
    ("B200", {"hbm_bytes_per_s": 8.0e12, "fp8_dense_flops": 4500e12}),
    ("A100", {"hbm_bytes_per_s": 2.0e12, "fp8_dense_flops": None}),
]

DEV = "cuda"
ACT = torch.bfloat16
FP8 = torch.float8_e4m3fn          # replaced by bf16 in --smoke where the device cannot cast to FP8
FP8_MAX = 448.0
CACHE_AS_U8 = True                 # the paged cache is stored as raw bytes (uint8 view of FP8 values)
SMOKE = False                      # --smoke: few iterations, one CPU thread
EPS = 1e-5
ROPE_BASE = 500000.0
BLOCK = 64                         # tokens per paged-cache block

# Logical bytes per token (each input read once, each output written once; BF16 = 2 bytes, FP8 = 1).
# H hidden, hq/hkv query/KV heads per GPU, d head dim, Fm MLP width per GPU. Norm weights, the
# quant scale and the cos/sin table rows (4d: float32 cos and sin of d/2 each) are counted as noted.
BYTES = {
    "add_norm": ("8H: read x, residual; write residual, normed (BF16)", lambda c: 8 * c.hidden),
    "quant_hidden": ("3H: read BF16, write FP8", lambda c: 3 * c.hidden),
    "quant_hidden_dynamic": ("3H (logical; amax needs a second read)", lambda c: 3 * c.hidden),
    "add_norm_quant": ("7H: read x, residual; write residual (BF16), normed (FP8)", lambda c: 7 * c.hidden),
    "rope": ("4(hq+hkv)d + 4d + 8: read/write q, k (BF16), cos/sin row, position",
             lambda c: 4 * (c.hq + c.hkv) * c.d + 4 * c.d + 8),
    "kv_write": ("6 hkv d + 8: read k, v (BF16), write k, v (FP8), slot", lambda c: 6 * c.hkv * c.d + 8),
    "rope_kv_write": ("2(hq+2hkv)d + 2 hq d + 2 hkv d + 4d + 16: read qkv, write q (BF16), k, v (FP8)",
                      lambda c: 2 * (c.hq + 2 * c.hkv) * c.d + 2 * c.hq * c.d + 2 * c.hkv * c.d + 4 * c.d + 16),
    "quant_attn_out": ("3 hq d: read BF16, write FP8", lambda c: 3 * c.hq * c.d),
    "swiglu": ("6Fm: read gate, up, write product (BF16)", lambda c: 6 * c.mlp),
    "quant_mlp": ("3Fm: read BF16, write FP8", lambda c: 3 * c.mlp),
    "silu_mul_quant": ("5Fm: read gate, up (BF16), write product (FP8)", lambda c: 5 * c.mlp),
}
PLAIN_TP1 = ["add_norm", "quant_hidden", "quant_hidden_dynamic", "rope", "kv_write", "quant_attn_out",
             "swiglu", "quant_mlp"]
PLAIN_TPN = ["rope", "kv_write", "quant_attn_out", "swiglu", "quant_mlp"]
COMPILED_TP1 = ["add_norm_quant", "rope_kv_write", "quant_attn_out", "silu_mul_quant",
                "add_norm", "quant_hidden", "rope", "kv_write", "swiglu", "quant_mlp"]
COMPILED_TPN = ["rope_kv_write", "quant_attn_out", "silu_mul_quant"]

GEMMS_70B = [("qkv", 8192, 10240), ("o", 8192, 8192), ("gate_up", 8192, 57344), ("down", 28672, 8192)]  # K, N
GEMMS_SMOKE = [("qkv", 128, 256), ("o", 128, 128), ("gate_up", 128, 512), ("down", 256, 128)]


@dataclass
class Cfg:
    name: str
    shape: str
    tp: int
    hidden: int
    hq: int
    hkv: int
    d: int
    mlp: int


def configs(smoke: bool) -> list[Cfg]:
    if smoke:
        big, small = (512, 16, 8, 32, 1024), (256, 8, 2, 32, 512)
    else:
        big, small = (8192, 64, 8, 128, 28672), (4096, 32, 8, 128, 14336)
    h, hq, hkv, d, f = big
    out = [Cfg("70b_tp1", "70b", 1, h, hq, hkv, d, f), Cfg("8b_tp1", "8b", 1, *small)]
    for tp in (8, 2, 4):                      # in order of interest, should the time budget run out
        out.append(Cfg(f"70b_tp{tp}", "70b", tp, h, hq // tp, hkv // tp, d, f // tp))
    return out


# ---------------------------------------------------------------- timing (house style, CPU fallback)

def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(fn, iters=20, warmup=5) -> float:
    """Mean seconds per call, by CUDA events around `iters` calls after `warmup` (wall clock on CPU)."""
    if SMOKE:
        iters, warmup = min(iters, 3), min(warmup, 1)
    for _ in range(warmup):
        fn()
    if DEV != "cuda":
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) / iters
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters / 1e3


def make_replay(fn, reps=1):
    """A callable running fn `reps` times: a CUDA graph replay on CUDA (no launch overhead, as serving
    engines run), a plain loop elsewhere."""
    def body():
        for _ in range(reps):
            fn()
    if DEV != "cuda":
        return body
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    return g.replay


def graphed(fn, iters=20, reps=1) -> float:
    """Seconds per fn call, replaying a CUDA graph of `reps` calls `iters` times (small kernels are
    repeated inside the graph so the replays are not bound by the host's launch rate)."""
    if SMOKE:
        reps = min(reps, 2)
    return timed(make_replay(fn, reps), iters=iters, warmup=3) / reps


# ---------------------------------------------------------------- the ops (plain torch; compiled as is)

def op_quant(x, inv_scale):
    """Per-tensor FP8 quantisation with a given (static, calibrated) scale."""
    return (x.float() * inv_scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)


def op_quant_dynamic(x):
    """Per-tensor FP8 quantisation with the scale from this tensor's amax (two passes over x)."""
    s = x.abs().amax().float().clamp(min=1e-12) / FP8_MAX
    return (x.float() / s).clamp(-FP8_MAX, FP8_MAX).to(FP8), s


def op_add_norm(x, res, w):
    r = x + res
    return r, F.rms_norm(r, (r.shape[-1],), w, EPS)


def op_add_norm_quant(x, res, w, inv_scale):
    r = x + res
    return r, op_quant(F.rms_norm(r, (r.shape[-1],), w, EPS), inv_scale)


def _rot(x, cos, sin):
    """Rotate-half RoPE in float32 (x: tokens, heads, d; cos/sin: tokens, 1, d/2)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def op_rope(q, k, pos, cos_t, sin_t):
    cos, sin = cos_t[pos].unsqueeze(1), sin_t[pos].unsqueeze(1)
    return _rot(q, cos, sin).to(q.dtype), _rot(k, cos, sin).to(k.dtype)


def _as(val, cache):
    """FP8 values as the cache's element type (a bitcast when the cache is stored as uint8)."""
    return val if val.dtype == cache.dtype else val.view(cache.dtype)


def op_kv_write(k, v, slots, k_cache, v_cache, inv_scale):
    """Quantise k, v to FP8 and scatter their rows into the paged cache at `slots`."""
    k_cache.index_copy_(0, slots, _as(op_quant(k, inv_scale), k_cache))
    v_cache.index_copy_(0, slots, _as(op_quant(v, inv_scale), v_cache))


def op_rope_kv_write(qkv, pos, cos_t, sin_t, slots, k_cache, v_cache, inv_scale):
    """RoPE on q and k of the qkv GEMM's output, k and v written to the FP8 cache; returns q."""
    hkv = k_cache.shape[1]
    q, k, v = qkv.split([qkv.shape[1] - 2 * hkv, hkv, hkv], dim=1)
    cos, sin = cos_t[pos].unsqueeze(1), sin_t[pos].unsqueeze(1)
    k_cache.index_copy_(0, slots, _as(op_quant(_rot(k, cos, sin), inv_scale), k_cache))
    v_cache.index_copy_(0, slots, _as(op_quant(v, inv_scale), v_cache))
    return _rot(q, cos, sin).to(qkv.dtype)


def op_swiglu(gate_up):
    g, u = gate_up.chunk(2, dim=-1)
    return F.silu(g) * u


def op_silu_mul_quant(gate_up, inv_scale):
    return op_quant(op_swiglu(gate_up), inv_scale)


def _mark(*ts):
    """Token dimension dynamic, so one compile serves every m (the other dimensions stay static)."""
    mark = getattr(torch._dynamo, "maybe_mark_dynamic", torch._dynamo.mark_dynamic)
    for t in ts:
        mark(t, 0)


def inputs(c: Cfg, m: int, n_slots: int, cos_t, sin_t) -> dict:
    """Tensors for every op at m tokens, with the argument tuples of each op (plain and compiled)."""
    r = lambda *s: torch.randn(*s, device=DEV, dtype=ACT)
    x, res, y = r(m, c.hidden), r(m, c.hidden), r(m, c.hidden)
    w = 1 + 0.1 * r(c.hidden)
    inv = torch.tensor(32.0, device=DEV, dtype=torch.float32)
    qkv = r(m, c.hq + 2 * c.hkv, c.d)
    q, k, v = qkv[:, :c.hq], qkv[:, c.hq:c.hq + c.hkv], qkv[:, c.hq + c.hkv:]
    pos = torch.randint(0, cos_t.shape[0], (m,), device=DEV)
    blocks = torch.randperm(n_slots // BLOCK, device=DEV)[:math.ceil(m / BLOCK)]
    slots = (blocks[:, None] * BLOCK + torch.arange(BLOCK, device=DEV)).flatten()[:m].contiguous()
    cache_dtype = torch.uint8 if CACHE_AS_U8 else FP8
    kc = torch.zeros(n_slots, c.hkv, c.d, device=DEV, dtype=cache_dtype)
    vc = torch.zeros_like(kc)
    a_out, gu, act = r(m, c.hq * c.d), r(m, 2 * c.mlp), r(m, c.mlp)
    _mark(x, res, y, qkv, q, k, v, pos, slots, a_out, gu, act)
    args = {
        "add_norm": (op_add_norm, (x, res, w)),
        "quant_hidden": (op_quant, (y, inv)),
        "quant_hidden_dynamic": (op_quant_dynamic, (y,)),
        "add_norm_quant": (op_add_norm_quant, (x, res, w, inv)),
        "rope": (op_rope, (q, k, pos, cos_t, sin_t)),
        "kv_write": (op_kv_write, (k, v, slots, kc, vc, inv)),
        "rope_kv_write": (op_rope_kv_write, (qkv, pos, cos_t, sin_t, slots, kc, vc, inv)),
        "quant_attn_out": (op_quant, (a_out, inv)),
        "swiglu": (op_swiglu, (gu,)),
        "quant_mlp": (op_quant, (act, inv)),
        "silu_mul_quant": (op_silu_mul_quant, (gu, inv)),
    }
    if CACHE_AS_U8:     # fallback for the compiled KV writes: the same bytes, typed FP8 (no bitcast)
        kf, vf = kc.view(FP8), vc.view(FP8)
        args["kv_write@fp8cache"] = (op_kv_write, (k, v, slots, kf, vf, inv))
        args["rope_kv_write@fp8cache"] = (op_rope_kv_write, (qkv, pos, cos_t, sin_t, slots, kf, vf, inv))
    return args


def rope_tables(d: int, max_pos: int):
    inv_freq = 1.0 / ROPE_BASE ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d)
    ang = torch.arange(max_pos, device=DEV, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return ang.cos().contiguous(), ang.sin().contiguous()


def _kernel_count():
    try:
        return int(torch._inductor.metrics.generated_kernel_count)
    except Exception:
        return None


def _graph_count():
    try:
        return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    except Exception:
        return None


def time_op(kind: str, key: str, fn0, a, compiled_fns: dict, compile_mode: str | None, m: int, reps: int,
            iters: int) -> dict:
    """One op at m tokens: plain (graphed and eager) or compiled (first call, then graphed)."""
    row = {"m": m}
    if kind == "compiled":
        if key not in compiled_fns:
            compiled_fns[key] = torch.compile(fn0, mode=None if compile_mode == "default" else compile_mode)
        cf = compiled_fns[key]
        fn = lambda: cf(*a)
        k0, t1 = _kernel_count(), time.time()
        fn()
        sync()
        row["first_call_s"] = time.time() - t1                  # includes (re)compilation
        k1 = _kernel_count()
        if k0 is not None and k1 is not None and k1 > k0:
            row["kernels_generated"] = k1 - k0
    else:
        fn = lambda: fn0(*a)
        row["eager_s"] = timed(fn, iters=10, warmup=3)
    row["s"] = graphed(fn, iters=iters, reps=reps)
    return row


def nongemm(report: dict, save, ms: list[int], compile_mode: str | None, budget_s: float, smoke: bool,
            quick: bool) -> None:
    """Section 1; fills report['nongemm'] config by config (saved after each)."""
    hbm = (report.get("datasheet") or {}).get("hbm_bytes_per_s")
    sec = report["nongemm"] = {"m": ms, "compile_mode": compile_mode, "budget_s": budget_s,
                               "bytes_formulas": {k: v[0] for k, v in BYTES.items()}, "configs": {}}
    dc = torch._dynamo.config
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(dc, knob):
            setattr(dc, knob, 64)
    if hasattr(dc, "automatic_dynamic_shapes"):
        dc.automatic_dynamic_shapes = False        # only the token dimension (marked) is dynamic
    t0 = time.time()
    n_slots = BLOCK * math.ceil(2 * max(ms) / BLOCK)
    cfgs = configs(smoke)
    if quick:                                      # a first try: every code path, fewer compiles
        cfgs = [c for c in cfgs if c.tp in (1, 8)]
    for c in cfgs:
        crec = sec["configs"][c.name] = {**asdict(c), "cache_bytes": 2 * n_slots * c.hkv * c.d}
        if not compile_mode and sec.get("compile_disabled"):
            crec["compile_disabled"] = sec["compile_disabled"]
        if time.time() - t0 > budget_s:
            crec["skipped"] = f"time budget of {budget_s:.0f} s for this section spent"
            save()
            continue
        try:
            torch._dynamo.reset()
            graphs0 = _graph_count()
            plain = PLAIN_TP1 if c.tp == 1 else PLAIN_TPN
            comp = (COMPILED_TP1[:4] if quick else COMPILED_TP1) if c.tp == 1 else COMPILED_TPN
            comp = comp if compile_mode else []
            ops = crec["ops"] = {"plain": {}, "compiled": {}}
            compiled_fns = {}
            for kind, names in (("plain", plain), ("compiled", comp)):
                for name in names:
                    ops[kind][name] = {"bytes_per_token": BYTES[name][1](c), "rows": []}
            cos_t, sin_t = rope_tables(c.d, 16384)
            cfg_t0 = time.time()
            for m in ms:
                if time.time() - t0 > budget_s:
                    crec["truncated"] = f"time budget spent before m={m}"
                    break
                args = inputs(c, m, n_slots, cos_t, sin_t)
                reps, iters = (10, 20) if m <= 1024 else (3, 10)
                for kind in ("plain", "compiled"):
                    for name, rec in ops[kind].items():
                        if rec.get("error"):
                            continue
                        variant = rec.get("variant", name)
                        try:
                            fn0, a = args[variant]
                            row = time_op(kind, variant, fn0, a, compiled_fns, compile_mode, m, reps, iters)
                        except Exception as e:
                            alt = name + "@fp8cache"
                            if kind == "compiled" and variant == name and alt in args:
                                rec["variant"], rec["first_error"] = alt, f"{type(e).__name__}: {e}"[:2000]
                                try:                            # same op, cache typed FP8 instead of uint8
                                    fn0, a = args[alt]
                                    row = time_op(kind, alt, fn0, a, compiled_fns, compile_mode, m, reps, iters)
                                except Exception as e2:
                                    rec["error"], rec["error_at_m"] = f"{type(e2).__name__}: {e2}"[:2000], m
                                    continue
                            else:                               # record, drop this op, keep the rest
                                rec["error"], rec["error_at_m"] = f"{type(e).__name__}: {e}"[:2000], m
                                continue
                        nbytes = rec["bytes_per_token"] * m
                        row.update(bytes=nbytes, bytes_per_s=nbytes / row["s"],
                                   hbm_fraction=nbytes / row["s"] / hbm if hbm else None)
                        rec["rows"].append(row)
                del args
            crec["seconds"] = time.time() - cfg_t0
            if ops["compiled"] and all(r.get("error") and not r["rows"] for r in ops["compiled"].values()):
                sec["compile_disabled"] = f"every compiled op failed in {c.name}; later configs run plain only"
                compile_mode = None
            if graphs0 is not None and _graph_count() is not None:
                crec["graphs_compiled"] = _graph_count() - graphs0
            # A quick look: per-op slope and floor.
            for kind in ("plain", "compiled"):
                for name, rec in ops[kind].items():
                    pts = {r["m"]: r["s"] for r in rec["rows"]}
                    if pts:
                        f = fit_curve(pts, rec["bytes_per_token"], hbm)
                        print(f"    {c.name:8s} {kind:8s} {name:20s} {f['slope_us_per_token'] * 1e3:8.3f} ns/token  "
                              f"floor {f['floor_us']:7.2f} us  HBM {f['hbm_fraction'] or 0:.2f}"
                              + (f"  ({rec['variant']})" if "variant" in rec else ""), flush=True)
                    if rec.get("error"):
                        print(f"    {c.name:8s} {kind:8s} {name:20s} ERROR at m={rec.get('error_at_m')}: "
                              f"{rec['error'][:150]}", flush=True)
        except Exception as e:
            crec["error"] = f"{type(e).__name__}: {e}"
            crec["traceback"] = traceback.format_exc()[-3000:]
        print(f"  [{time.time() - t0:6.1f} s] non-GEMM {c.name} done", flush=True)
        if DEV == "cuda":
            torch.cuda.empty_cache()
        save()


# ---------------------------------------------------------------- FP8 GEMMs

def gemm_setup(gemms, fp8_ok: bool):
    """Weights (N, K) row-major, so w.t() is the column-major (K, N) operand _scaled_mm wants."""
    one = torch.tensor(1.0, device=DEV, dtype=torch.float32)           # per-tensor scales: float32
    ws = {}
    for name, k, n in gemms:
        w = torch.randn(n, k, device=DEV) * 0.02
        ws[name] = w.to(FP8 if fp8_ok else ACT)
        del w

    def mm(x, w):
        if fp8_ok:
            return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=ACT)
        return x @ w.t()
    return ws, mm


def act_fp8(m, k, fp8_ok):
    return torch.randn(m, k, device=DEV).to(FP8 if fp8_ok else ACT)


def layout_check() -> dict:
    """_scaled_mm's shape/layout/scale checks at the real 70B shapes, on meta tensors (these run the
    CUDA rules: A row-major, B column-major, K and N multiples of 16, float32 per-tensor scales)."""
    out = {}
    s = torch.empty((), device="meta", dtype=torch.float32)
    for name, k, n in GEMMS_70B:
        w = torch.empty(n, k, device="meta", dtype=torch.float8_e4m3fn)
        for m in (1, 450, 794, 4096):
            x = torch.empty(m, k, device="meta", dtype=torch.float8_e4m3fn)
            y = torch._scaled_mm(x, w.t(), scale_a=s, scale_b=s, out_dtype=torch.bfloat16)
            assert tuple(y.shape) == (m, n), (name, m, y.shape)
        out[name] = {"k": k, "n": n, "w_t_stride": list(w.t().stride()), "ok": True}
    return out


def mpad(gemms, ms: list[int], fp8_ok: bool, peak: float | None, rounds=3) -> dict:
    """Section 2: the layer GEMMs at each m, CUDA-graphed, median of `rounds` interleaved rounds."""
    ws, mm = gemm_setup(gemms, fp8_ok)
    xs = {(k, m): act_fp8(m, k, fp8_ok) for m in ms for k in {k for _, k, _ in gemms}}
    reps = 1 if SMOKE else 4
    replays, times = {}, {}
    for name, k, n in gemms:
        for m in ms:
            x, w = xs[(k, m)], ws[name]
            replays[(name, m)] = make_replay(lambda x=x, w=w: mm(x, w), reps)
    for m in ms:
        fns = [(xs[(k, m)], ws[name]) for name, k, _ in gemms]
        replays[("layer", m)] = make_replay(lambda fns=fns: [mm(x, w) for x, w in fns], 1)
    for _ in range(rounds):
        for key, rp in replays.items():
            r = 1 if key[0] == "layer" else reps
            times.setdefault(key, []).append(timed(rp, iters=10, warmup=2) / r)
    med = lambda v: sorted(v)[len(v) // 2]
    rows, layer = [], []
    for name, k, n in gemms:
        for m in ms:
            t = med(times[(name, m)])
            fl = 2 * m * k * n
            rows.append({"gemm": name, "m": m, "k": k, "n": n, "s": t, "rounds_s": times[(name, m)],
                         "tflops": fl / t / 1e12, "fraction_of_fp8_peak": fl / t / peak if peak else None})
    for m in ms:
        tsum = sum(r["s"] for r in rows if r["m"] == m)
        fl = 2 * m * sum(k * n for _, k, n in gemms)
        layer.append({"m": m, "sum_s": tsum, "graph_s": med(times[("layer", m)]), "tflops": fl / tsum / 1e12})
    del replays
    lay = {r["m"]: r["sum_s"] for r in layer}
    print("    m     layer us  TFLOP/s  t(m)/t(ceil128)  m/ceil128", flush=True)
    for r in layer:
        up = math.ceil(r["m"] / 128) * 128
        ratio = f"{lay[r['m']] / lay[up]:15.3f}  {r['m'] / up:9.3f}" if up != r["m"] and up in lay else ""
        print(f"    {r['m']:5d} {r['sum_s'] * 1e6:9.1f} {r['tflops']:8.0f}  {ratio}", flush=True)
    return {"fp8": fp8_ok, "rounds": rounds, "reps_in_graph": reps, "use_fast_accum": False,
            "rows": rows, "layer": layer}


# ---------------------------------------------------------------- sustained clocks

SMI_FIELDS = ["clocks_sm", "clocks_max_sm", "power_draw", "power_limit", "temperature_gpu"]
SMI_QUERY = "clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"


def _num(s: str):
    try:
        return float(s)
    except ValueError:
        return None


class Smi:
    """nvidia-smi queries for this process's GPU; every call returns None if nvidia-smi is missing."""

    def __init__(self):
        self.ids = [None]
        self.error = None
        if DEV == "cuda":
            try:
                u = str(torch.cuda.get_device_properties(0).uuid)
                self.ids = [u if u.startswith("GPU-") else "GPU-" + u, None]
            except Exception:
                pass

    def query(self, fields: str) -> list | None:
        if self.error:
            return None
        for gid in list(self.ids):
            cmd = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"]
            if gid:
                cmd.insert(1, f"--id={gid}")
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            except (FileNotFoundError, PermissionError, OSError) as e:
                self.error = f"{type(e).__name__}: {e}"
                return None
            except subprocess.TimeoutExpired:
                return None
            if p.returncode == 0 and p.stdout.strip():
                self.ids = [gid]                   # this form works; keep it
                return [x.strip() for x in p.stdout.strip().splitlines()[0].split(",")]
        return None

    def sample(self, t: float) -> dict | None:
        v = self.query(SMI_QUERY)
        return None if v is None else {"t": t, **{k: _num(x) for k, x in zip(SMI_FIELDS, v)}}


def sustain(gemms, m: int, duration: float, window: float, fp8_ok: bool, period=2.0) -> dict:
    """Section 3: the layer GEMMs back to back for `duration` s; TFLOP/s per `window` s."""
    ws, mm = gemm_setup(gemms, fp8_ok)
    xs = {k: act_fp8(m, k, fp8_ok) for k in {k for _, k, _ in gemms}}
    step = lambda: [mm(xs[k], ws[name]) for name, k, _ in gemms]
    flops = 2 * m * sum(k * n for _, k, n in gemms)
    t_step = graphed(step, iters=5)
    reps = max(1, min(50, round(0.05 / t_step)))          # ~50 ms per replay
    replay = make_replay(step, reps)
    if DEV == "cuda":
        def mark():
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        wait = lambda e: e.synchronize()
        between = lambda a, b: a.elapsed_time(b) / 1e3
    else:
        mark, wait, between = time.perf_counter, (lambda e: None), (lambda a, b: b - a)

    smi = Smi()
    samples, stop = [], threading.Event()
    t0 = time.time()
    samples.append(smi.sample(0.0))

    def sampler():
        while not stop.wait(period):
            samples.append(smi.sample(time.time() - t0))
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    windows, pending = [], []
    try:
        sync()
        w_start, w_mark, count = time.time(), mark(), 0
        while True:
            replay()
            e = mark()
            pending.append(e)
            count += 1
            if len(pending) > 2:                  # keep two replays queued: no bubbles, host in step
                wait(pending.pop(0))
            now = time.time()
            if now - w_start >= window or now - t0 >= duration:
                wait(e)
                secs = between(w_mark, e)
                windows.append({"t_start_s": w_start - t0, "t_end_s": time.time() - t0, "gpu_s": secs,
                                "replays": count, "tflops": count * reps * flops / secs / 1e12})
                pending.clear()
                w_start, w_mark, count = time.time(), e, 0
                if now - t0 >= duration:
                    break
    finally:
        stop.set()
        th.join(timeout=15)
    samples.append(smi.sample(time.time() - t0))
    return {"m": m, "gemms": [g[0] for g in gemms], "flops_per_step": flops, "step_s": t_step,
            "steps_per_replay": reps, "duration_s": duration, "window_s": window,
            "nvidia_smi": smi.error or "ok", "windows": windows, "samples": samples}


# ---------------------------------------------------------------- main

def fp8_supported() -> bool:
    try:
        x = torch.ones(4, device=DEV).to(torch.float8_e4m3fn)
        return bool((x.float() == 1).all())
    except Exception:
        return False


def env_info() -> dict:
    """What torch.compile needs besides torch: Triton, and a C compiler for Triton's launcher stubs."""
    out = {"python": sys.version.split()[0], "cc": shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")}
    try:
        import triton
        out["triton"] = triton.__version__
    except Exception as e:
        out["triton"] = f"not importable: {type(e).__name__}"
    return out


def main() -> None:
    global DEV, FP8, FP8_MAX, CACHE_AS_U8, SMOKE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="gaps.json")
    p.add_argument("--quick", action="store_true", help="fewer m values, 10 s sustain")
    p.add_argument("--smoke", action="store_true", help="CPU, tiny shapes: proves the code paths run, numbers mean nothing")
    p.add_argument("--sustain-s", type=float, help="seconds of back-to-back GEMMs (default 60; --quick 10)")
    p.add_argument("--window-s", type=float, help="TFLOP/s window (default 5 s)")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode for the fused ops, e.g. max-autotune-no-cudagraphs; 'none' skips compiling")
    p.add_argument("--nongemm-budget-s", type=float,
                   help="section 1 starts no further config (or m) after this many seconds (default 120; --smoke 900)")
    p.add_argument("--max-run-s", type=float, default=270.0,
                   help="the sustained run is shortened (to no less than 10 s) to end the run by then")
    args = p.parse_args()

    t_run = time.time()
    torch.manual_seed(0)
    if args.smoke:
        DEV, SMOKE = "cpu", True
        torch.set_num_threads(1)                # the compiled CPU kernels' threads contend otherwise
    elif not torch.cuda.is_available():
        sys.exit("measure_gaps.py needs a CUDA GPU (or --smoke for a CPU check of the code paths)")
    fp8_ok = fp8_supported()
    if not fp8_ok:
        FP8, FP8_MAX, CACHE_AS_U8 = ACT, 1e30, False
    # FP8 GEMMs (_scaled_mm) need compute capability 8.9+ (Ada, Hopper, Blackwell); BF16 otherwise.
    gemm_fp8 = fp8_ok and (DEV != "cuda" or torch.cuda.get_device_capability(0) >= (8, 9))
    if args.smoke:
        ms, gemm_ms, gemms = [16, 64, 128, 256, 512], [16, 32, 48, 64, 96, 128], GEMMS_SMOKE
        sustain_s, window_s, sustain_m = args.sustain_s or 2.0, args.window_s or 0.5, 64
    elif args.quick:
        ms, gemm_ms, gemms = [64, 256, 1024, 4096], [256, 384, 450, 512, 640, 794, 896, 1024], GEMMS_70B
        sustain_s, window_s, sustain_m = args.sustain_s or 10.0, args.window_s or 5.0, 4096
    else:
        ms = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
        gemm_ms = [128, 256, 320, 384, 448, 450, 512, 576, 640, 704, 768, 794, 832, 896, 960, 1024]
        gemms, sustain_s, window_s, sustain_m = GEMMS_70B, args.sustain_s or 60.0, args.window_s or 5.0, 4096
    budget_s = args.nongemm_budget_s or (900.0 if args.smoke else 120.0)
    compile_mode = None if args.compile_mode.lower() == "none" else args.compile_mode

    name = torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu (smoke)"
    sheet = next((v for k, v in DATASHEETS if k in name), None)
    if args.smoke:
        sheet = {"hbm_bytes_per_s": 1e11, "fp8_dense_flops": 1e12, "note": "nominal, smoke only"}
    report = {"script": "benchmarks/gpu/measure_gaps.py", "smoke": args.smoke, "quick": args.quick,
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "torch": torch.__version__,
              "cuda": torch.version.cuda, "device": name, "datasheet": sheet, "fp8": fp8_ok, "gemm_fp8": gemm_fp8,
              "args": vars(args), "env": env_info()}
    if DEV == "cuda":
        props = torch.cuda.get_device_properties(0)
        report.update(sms=props.multi_processor_count, memory_bytes=props.total_memory)
        v = Smi().query("name,driver_version,clocks.max.sm,power.limit,power.max_limit")
        report["nvidia_smi"] = None if v is None else dict(
            zip(["name", "driver", "clocks_max_sm", "power_limit", "power_max_limit"], v))

    def save():
        report["run_s"] = time.time() - t_run
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.out)

    def log(section):
        txt = json.dumps(report.get(section), default=str)
        print(f"[{time.time() - t_run:6.1f} s] {section}: {txt[:300]}{'...' if len(txt) > 300 else ''}", flush=True)

    peak = (sheet or {}).get("fp8_dense_flops")

    def sustained_for():
        left = args.max_run_s - (time.time() - t_run) - 10
        if left < sustain_s and not args.smoke:
            report["sustain_shortened"] = f"{sustain_s:.0f} s -> {max(10.0, left):.0f} s to end by --max-run-s"
            return max(10.0, left)
        return sustain_s
    sections = [
        ("layout_check", lambda: layout_check()),
        ("nongemm", lambda: nongemm(report, save, ms, compile_mode, budget_s, args.smoke, args.quick)),
        ("mpad", lambda: mpad(gemms, gemm_ms, gemm_fp8, peak if gemm_fp8 else None)),
        ("sustain", lambda: sustain(gemms, sustain_m, sustained_for(), window_s, gemm_fp8)),
    ]
    print(f"{name}, torch {torch.__version__}, CUDA {torch.version.cuda}, fp8 {fp8_ok}, out {args.out}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save()                                                      # an unwritable --out fails now, not later
    for section, fn in sections:
        try:
            res = fn()
            if res is not None:
                report[section] = res
        except Exception as e:                                  # keep the other sections
            prev = report.get(section) if isinstance(report.get(section), dict) else {}
            report[section] = {**prev, "error": f"{type(e).__name__}: {e}"[:2000],
                               "traceback": traceback.format_exc()[-3000:]}
        log(section)
        if DEV == "cuda":
            torch.cuda.empty_cache()
        save()
    try:
        report["derived"] = derive(report)
        lines = summary_lines(report["derived"])
    except Exception as e:
        report["derived"] = {"error": f"{type(e).__name__}: {e}"}
        lines = [f"derive failed: {e}"]
    save()
    print(f"\n==== summary ({report['run_s']:.0f} s; {args.out}) ====")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
