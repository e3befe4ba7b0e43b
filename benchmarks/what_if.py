"""What-if terms of the step model that are not in the presets, for bench_validation to score.

    .venv/bin/python benchmarks/bench_validation.py --what-if elementwise [--quick]

Each term changes a row's Setup (``apply``) through fields every engine path already reads, so
no engine code changes and the presets' numbers stay where they are:

- ``elementwise`` / ``elementwise+swiglu``: per-token work outside the GEMMs (below).

(An ``allreduce`` what-if, the measured all-reduce table's secant in place of the presets' line,
was scored here until the presets read the table at each step's own size, ``Setup.comm_curve``.)

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

from sim import presets

HBM_FRACTION = 0.55        # of the datasheet HBM the op set reaches (Vidur's H100 profile; README 1a)
SETS = ("fused", "fused+swiglu")
TERMS = ("elementwise", "elementwise+swiglu")
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


def apply(setup, terms, model_name: str, gpu_name: str, tp: int, weight_dtype: str, kv_dtype: str):
    """``setup`` with the named what-if ``terms`` (``TERMS``) added."""
    unknown = set(terms) - set(TERMS)
    if unknown:
        raise ValueError(f"what-if terms must be among {TERMS}, got {sorted(unknown)}")
    if "elementwise" in terms and "elementwise+swiglu" in terms:
        raise ValueError("what-if: elementwise and elementwise+swiglu are two versions of one term; pick one")
    for which, name in (("fused", "elementwise"), ("fused+swiglu", "elementwise+swiglu")):
        if name in terms:
            extra = seconds_per_token(model_name, gpu_name, tp, weight_dtype, kv_dtype, which)
            return setup.replace(comm_s_per_token=setup.comm_s_per_token + extra)
    return setup
