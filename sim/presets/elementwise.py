"""The memory-bound kernels between a layer's GEMMs: a derived per-token term of the calibrated step.

A decoder layer runs more than its GEMMs and attention: the residual add and RMSNorm (twice), RoPE
with the KV-cache write, and, where the GEMMs take FP8/FP4/INT8 inputs, the quantisation of those
inputs. None of these is in a GEMM or attention kernel table, and each moves a fixed number of bytes
per token, so their time is bytes / (a fraction of HBM bandwidth), added per computed token
(``Setup.comm_s_per_token``, which every engine path adds serially per token of the step).

Derived, not fitted: the bytes come from the model's shapes; the fraction of HBM such kernels reach
is measured. Vidur's kernel profiles of Llama-2-70B's vLLM-style ops (microsoft/vidur @ 7d47513,
``data/profiling/compute/{h100,a100}/<model>/mlp.csv``: input/post-attention RMSNorm, RoPE, the
residual add, 128-2048 tokens, TP 1-8) move their logical bytes at 0.55 of H100's datasheet HBM and
0.50 of A100's. A GPU with no profile of its own uses H100's fraction (``HBM_FRACTION``). How the
tokens and bytes were counted, and what the term does to the validation set:
tests/validation/README.md ("What to measure next", item 1a).

Which ops an engine fuses on Hopper is not published; the set counted here is the fused one that
TensorRT-LLM's MLPerf configs imply (add + RMSNorm + quantise as one pass, RoPE with the KV write
as one; SiLU-mul in the GEMM epilogue, ``gemm_swiglu_plugin``), so the uncertainty is about a factor
of two either way. ``benchmarks/gpu/measure_gaps.py`` measures it on a GPU; its figure replaces this
derivation when it exists.

Bytes per token per layer (h = hidden, q = query heads x head dim, kv = KV heads x head dim):

    replicated over tp   2 x (add + RMSNorm + quantise): read the residual and the input, write the
                         residual (2 B each), write the normalised input (the GEMM input's bytes)
    divided by tp        RoPE + KV write: read q, k, v (2 B), write q (2 B) and k, v (KV bytes);
                         with quantised GEMM inputs, the attention output's quantisation: read q
                         (2 B), write it in the GEMM input's bytes
    (MLA: RoPE reads and writes the heads' rotary query and the shared rotary key, and the latent
    KV write is replicated, as every GPU keeps the whole latent)

The replicated pass is paid at every tp. Kernels that fuse it into the all-reduce exist (FlashInfer's
and TensorRT-LLM's all-reduce + residual + RMSNorm (+ quantise) fusion), but engines apply them to
small messages only or behind a switch (vLLM's fusion pass on Hopper up to 0.5 MiB at tp 8, 2 MiB at
tp 4, its ``FI_ALLREDUCE_FUSION_MAX_SIZE_MB``; SGLang's ``enable_flashinfer_allreduce_fusion``, off
by default), and the steps that carry the load are larger.
"""

from __future__ import annotations

from sim.presets.dtypes import KV_FORMATS, WEIGHT_FORMATS
from sim.presets.models import Model

# Fraction of the datasheet HBM bandwidth the op set reaches (Vidur's profiles, module docstring).
HBM_FRACTION = {"h100-sxm": 0.55, "a100-80gb": 0.50}
DEFAULT_GPU = "h100-sxm"           # the GPUs with no profile of their own use its fraction
# Bytes a quantised GEMM input takes per value: the payload plus its scales (NVFP4: an FP8 scale
# per 16 values); BF16 inputs are not quantised.
INPUT_BYTES = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5 + 1 / 16}


def hbm_fraction(gpu_key: str) -> float:
    """The fraction of ``gpu_key``'s datasheet HBM bandwidth the op set reaches."""
    return HBM_FRACTION.get(gpu_key, HBM_FRACTION[DEFAULT_GPU])


def bytes_per_token_layer(m: Model, weight_dtype: str, kv_dtype: str, swiglu: bool = False) -> tuple[float, float]:
    """(bytes replicated on every GPU, bytes divided by tp) per token per layer.

    ``swiglu``: also SiLU-mul as a pass of its own (read gate and up, write the product), for an
    engine that does not fuse it into the GEMM; the presets leave it out."""
    act = WEIGHT_FORMATS[weight_dtype].compute
    out_b = INPUT_BYTES[act]
    kv_b = KV_FORMATS[kv_dtype].bytes
    quantised = act != "bf16"
    h = m.hidden
    replicated = 2 * (3 * 2 * h + out_b * h)
    if m.kv_lora_rank:                                    # MLA
        rope = m.heads * m.rope_dim * 2 * 2 + m.rope_dim * 2 * 2
        replicated += (m.kv_lora_rank + m.rope_dim) * kv_b
        divided = rope
        q_out = m.heads * m.v_head_dim
    else:
        q = m.heads * m.head_dim
        kv = m.kv_heads * m.head_dim
        divided = (q + 2 * kv) * 2 + q * 2 + 2 * kv * kv_b
        q_out = q
    if quantised:
        divided += q_out * 2 + q_out * out_b
    if swiglu:
        width = m.experts_per_token * (m.moe_intermediate or m.intermediate) if m.is_moe else m.intermediate
        divided += 2 * width * 2 + width * out_b
    return float(replicated), float(divided)


def seconds_per_token(m: Model, gpu_key: str, datasheet_hbm: float, tp: int, weight_dtype: str,
                      kv_dtype: str, swiglu: bool = False) -> float:
    """Seconds per computed token of the whole instance (its ``tp`` GPUs run their shares at once)."""
    replicated, divided = bytes_per_token_layer(m, weight_dtype, kv_dtype, swiglu)
    return m.layers * (replicated + divided / tp) / (hbm_fraction(gpu_key) * datasheet_hbm)
