"""Number formats for weights and KV: bytes per value, the tensor cores that compute with them, and
which kernel measurements stand for them.

A weight format is named by how it is stored; what matters for the step model is (a) its bytes, which
set the weight read of a decode step, and (b) the matmul it runs: the activations' format decides
which tensor cores compute.

| name | stored | matmul | engines | kernel table used |
|---|---|---|---|---|
| bf16, fp16 | 2 bytes | BF16/FP16 tensor cores | all | bf16 |
| fp8 | 1 byte (E4M3, per-tensor or per-block scales) | FP8 tensor cores (W8A8) | vLLM, SGLang, TRT-LLM on Hopper+ | fp8 |
| int8 | 1 byte (SmoothQuant-style W8A8, per-channel scales) | INT8 tensor cores | TRT-LLM, vLLM (W8A8), LMDeploy | fp8's where measured (same peak, same GEMM shapes on Hopper), else bf16's fractions of peak |
| int4 | 0.5 byte (AWQ/GPTQ weight-only, group scales) | BF16 tensor cores after dequantisation (W4A16, Marlin-style kernels) | vLLM, SGLang, TRT-LLM, LMDeploy | bf16 |
| fp4 | 0.5 byte (NVFP4, block scales) | FP4 tensor cores (W4A4, Blackwell) | TRT-LLM, vLLM on B200 | fp4 |

So INT4 weight-only halves a decode step's weight read against FP8 and quarters it against BF16,
while its prefill runs at BF16 speed: the low-batch win and the compute-bound loss that chapter 05
shows. KV formats: bf16/fp16, fp8 and int8 (1 byte; attention reads them at the 1-byte KV-read
speed measured for fp8), fp4 (0.5 byte, Blackwell).

What these choices leave out (chapter 05 states each where its figures rely on it):
- the bytes are the payload's: INT4's FP16 scale per group of 128 adds 0.125 bit per value (~3%;
  Marlin's ideal speedup over FP16 is 3.87x, not 4x), NVFP4's FP8 scale per 16 values adds 0.5 bit
  (4.5 bits per value, 12.5% over 0.5 byte);
- INT4's dequantisation is free: its compute-bound GEMMs run at BF16's measured efficiency, which
  measured W4A16 kernels do not reach at large batch;
- INT8 W8A8 has no kernel table of its own on Hopper: it is FP8 by construction;
- attention precision follows the KV format: fp8 KV on FP8 tensor cores, int8 KV dequantised to
  BF16, fp4 KV on FP4 tensor cores (NVIDIA's NVFP4 KV cache is dequantised to FP8 instead).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    bytes: float        # per value, the payload only (scales are not counted: see the module docstring)
    compute: str        # the tensor cores the matmul runs on: "bf16", "fp8", "int8" or "fp4"
    table: str          # which kernel-table entry stands for its GEMMs or KV reads


WEIGHT_FORMATS = {
    "bf16": Format(2, "bf16", "bf16"),
    "fp16": Format(2, "bf16", "bf16"),
    "fp8": Format(1, "fp8", "fp8"),
    "int8": Format(1, "int8", "fp8"),
    "int4": Format(0.5, "bf16", "bf16"),
    "fp4": Format(0.5, "fp4", "fp4"),
}
KV_FORMATS = {
    "bf16": Format(2, "bf16", "bf16"),
    "fp16": Format(2, "bf16", "bf16"),
    "fp8": Format(1, "fp8", "fp8"),
    "int8": Format(1, "bf16", "fp8"),     # dequantised to BF16 for the attention matmuls
    "fp4": Format(0.5, "fp4", "fp4"),
}
# Bytes per value of every name either table knows (what sizing arithmetic asks).
DTYPE_BYTES = {name: f.bytes for table in (WEIGHT_FORMATS, KV_FORMATS) for name, f in table.items()}


def weight_format(name: str) -> Format:
    if name not in WEIGHT_FORMATS:
        raise ValueError(f"weight_dtype must be one of {sorted(WEIGHT_FORMATS)}, got {name!r}")
    return WEIGHT_FORMATS[name]


def kv_format(name: str) -> Format:
    if name not in KV_FORMATS:
        raise ValueError(f"kv_dtype must be one of {sorted(KV_FORMATS)}, got {name!r}")
    return KV_FORMATS[name]


def default_kv_dtype(weight_dtype: str) -> str:
    """The KV cache's format where none is given: the weights' own, or BF16 where the weights'
    format has no KV counterpart (weight-only INT4)."""
    return weight_dtype if weight_dtype in KV_FORMATS else "bf16"
