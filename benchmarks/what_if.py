"""What-if terms of the step model that are not in the presets, for bench_validation to score.

    .venv/bin/python benchmarks/bench_validation.py --what-if elementwise [--what-if allreduce] [--quick]

Each term changes a row's Setup (``apply``) through fields every engine path already reads, so
no engine code changes and the presets' numbers stay where they are:

- ``elementwise`` / ``elementwise+swiglu``: per-token work outside the GEMMs (below);
- ``allreduce``: the measured all-reduce table in place of the presets' straight-line fit (below).

Elementwise. The calibrated step has no term for the memory-bound kernels that run between a layer's GEMMs:
residual add + RMSNorm (twice), RoPE with the KV-cache write, FP8 quantisation of the GEMM inputs,
and (unless fused into the GEMM epilogue) the SwiGLU activation. tests/validation/README.md ("What
to measure next", item 1a) derives their cost from published per-kernel profiles without a GPU:
each op set moves a known number of bytes per token and layer, at about ``HBM_FRACTION`` of the
datasheet bandwidth (Vidur's H100 profiles of vLLM-style kernels: 0.55; A100 0.50). This module
turns that derivation into seconds per computed token, for any model in ``sim.presets.MODELS``,
so ``bench_validation.py`` can score the set with the term added to the Setup's per-token time
(``comm_s_per_token``, which every engine path already adds serially per computed token).

It is a what-if, kept out of ``sim/presets`` on purpose: the derivation is uncertain by about a
factor of two (which ops an engine fuses on Hopper is unpublished), and the project's rule is that
a step-model term enters the presets measured (``benchmarks/gpu/measure_gaps.py`` measures it).

Bytes per token per layer (h = hidden, q = query heads x head dim, kv = KV heads x head dim,
W = the MLP width one token passes through: the dense intermediate, or top-k x the expert width):

    replicated over tp   2 x (add + RMSNorm + quantise): read residual and input, write residual
                         (2 B each) and the normalised input (1 B in FP8, 2 B in BF16)
    divided by tp        RoPE + KV write: read q, k, v (2 B), write q (2 B) and k, v (KV dtype)
                         attention-output quantise (FP8 only): read q (2 B), write q (1 B)
                         SwiGLU ("fused+swiglu" only): read gate and up (2 B), write W (1 or 2 B)
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim import presets
from sim.presets.kernels import KERNELS

KERNEL_INPUTS = Path(__file__).resolve().parent / "gpu" / "kernel_inputs.json"
HBM_FRACTION = 0.55        # of the datasheet HBM the op set reaches (Vidur's H100 profile; README 1a)
SETS = ("fused", "fused+swiglu")
TERMS = ("elementwise", "elementwise+swiglu", "allreduce")
LOW_PRECISION = ("fp8", "fp4", "int8", "int4")     # weight formats whose GEMM inputs are quantised


def bytes_per_token_layer(model_name: str, weight_dtype: str, kv_dtype: str, which: str) -> tuple[float, float]:
    """(bytes replicated on every GPU, bytes divided by tp) per token per layer, for op set ``which``."""
    if which not in SETS:
        raise ValueError(f"elementwise set must be one of {SETS}, got {which!r}")
    m = presets.model(model_name)
    quantised = weight_dtype in LOW_PRECISION
    out_b = 1 if quantised else 2
    kv_b = 1 if kv_dtype in ("fp8", "int8") else 2
    h = m.hidden
    q = m.heads * (m.head_dim or h // m.heads)
    kv = m.kv_heads * (m.head_dim or h // m.heads)
    replicated = 2 * (3 * 2 * h + out_b * h)
    divided = (q + 2 * kv) * 2 + q * 2 + 2 * kv * kv_b
    if quantised:
        divided += q * 2 + q * 1
    if which == "fused+swiglu":
        width = (m.experts_per_token * (m.moe_intermediate or m.intermediate) if m.is_moe else m.intermediate)
        divided += 2 * width * 2 + width * out_b
    return float(replicated), float(divided)


def seconds_per_token(model_name: str, gpu_name: str, tp: int, weight_dtype: str, kv_dtype: str,
                      which: str) -> float:
    """Seconds per computed token of the whole instance (its GPUs run their shares in parallel)."""
    m = presets.model(model_name)
    g = presets.GPUS[presets.gpu_key(gpu_name)]
    replicated, divided = bytes_per_token_layer(model_name, weight_dtype, kv_dtype, which)
    return m.layers * (replicated + divided / tp) / (HBM_FRACTION * g.bandwidth)


# --- All-reduce ------------------------------------------------------------------------------------
# The presets time each all-reduce as alpha + bytes / beta, one line fitted to the measured custom
# all-reduce table (benchmarks/gpu/kernel_inputs.json, 8 KiB-256 MiB). At tp 4-8 the table is not a
# line: the fit is short of it by 40-55% at 1-2 MiB and over it by 50-87% at 80-256 MiB
# (benchmarks/capacity_gaps.py). A step that read the table at its own message size needs engine
# support (tests/validation/README.md, item 4); this what-if takes the table's secant between the
# two sizes a row's steps mostly carry, a decode step of the row's own batch (its clients per
# instance at fixed concurrency, else min(max_num_seqs, budget)) and a full chunk of
# max_num_batched_tokens: exact at both, linear between (the table is concave there, so mid-sized
# steps come out a little short). The decode end has to be the row's batch: the secant's intercept
# is far above the table at a few tokens, so a low-concurrency row timed on a max_num_seqs secant
# would pay tens of microseconds per all-reduce that it does not (NIM's TP 2 rows at 1-5 clients:
# ITL +4% -> +29%, the artefact the first version of this what-if had).

@lru_cache(maxsize=None)
def _table(gpu_key: str, tp: int) -> tuple[np.ndarray, np.ndarray] | None:
    raw = json.loads(KERNEL_INPUTS.read_text())["gpus"].get(gpu_key, {}).get("allreduce", {}).get(f"tp{tp}")
    if not raw:
        return None
    sizes, times = zip(*sorted((int(b), float(t) * 1e-6) for b, t in raw.items()))
    return np.log(np.array(sizes, dtype=float)), np.log(np.array(times))


def allreduce_seconds(gpu_name: str, tp: int, nbytes: float) -> float | None:
    """One all-reduce of ``nbytes`` on ``tp`` GPUs, log-log interpolated in the measured table (None
    where the GPU has no table at that tp)."""
    table = _table(presets.gpu_key(gpu_name), tp)
    if table is None:
        return None
    log_sizes, log_times = table
    return float(np.exp(np.interp(np.log(nbytes), log_sizes, log_times)))


def allreduce_terms(model_name: str, gpu_name: str, tp: int, low_tokens: int, high_tokens: int):
    """(seconds per step, seconds per token) of a step's all-reduces on the table's secant between
    ``low_tokens`` and ``high_tokens`` tokens per step, or None (tp 1, or no table)."""
    if tp == 1:
        return None
    m = presets.model(model_name)
    per_token = m.hidden * presets.ACTIVATION_BYTES
    low, high = max(1, low_tokens), max(low_tokens + 1, high_tokens)
    t_low = allreduce_seconds(gpu_name, tp, low * per_token)
    t_high = allreduce_seconds(gpu_name, tp, high * per_token)
    if t_low is None or t_high is None:
        return None
    slope = (t_high - t_low) / (high - low)                 # seconds per token, per all-reduce
    allreduces = 2 * m.layers
    return allreduces * (t_low - slope * low), allreduces * slope


def apply(setup, terms, model_name: str, gpu_name: str, tp: int, weight_dtype: str, kv_dtype: str,
          decode_batch: int | None = None):
    """``setup`` with the named what-if ``terms`` (``TERMS``) added. ``decode_batch``: the sequences a
    decode step of the row carries (its clients per instance); default min(max_num_seqs, budget)."""
    unknown = set(terms) - set(TERMS)
    if unknown:
        raise ValueError(f"what-if terms must be among {TERMS}, got {sorted(unknown)}")
    if "elementwise" in terms and "elementwise+swiglu" in terms:
        raise ValueError("what-if: elementwise and elementwise+swiglu are two versions of one term; pick one")
    changes = {}
    if "allreduce" in terms:
        low = min(setup.max_num_seqs, setup.max_num_batched_tokens)
        if decode_batch is not None:
            if decode_batch < 1:
                raise ValueError(f"what-if: decode_batch must be >= 1, got {decode_batch}")
            low = min(low, decode_batch)
        table = allreduce_terms(model_name, gpu_name, tp, low, setup.max_num_batched_tokens)
        fitted = KERNELS.get(presets.gpu_key(gpu_name), {}).get("allreduce", {}).get(tp)
        if table is not None and fitted is not None:
            per_step, per_token = table
            allreduces = 2 * presets.model(model_name).layers
            changes["step_overhead"] = setup.step_overhead - allreduces * fitted[0] + per_step
            changes["comm_s_per_token"] = per_token
    for which, name in (("fused", "elementwise"), ("fused+swiglu", "elementwise+swiglu")):
        if name in terms:
            extra = seconds_per_token(model_name, gpu_name, tp, weight_dtype, kv_dtype, which)
            changes["comm_s_per_token"] = changes.get("comm_s_per_token", setup.comm_s_per_token) + extra
    return setup.replace(**changes) if changes else setup
