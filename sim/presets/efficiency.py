"""How fast a GPU runs one step's kernels: the calibrated preset's efficiency terms.

Every number here is a kernel measurement, never a fit to a serving benchmark:

- NVIDIA GPUs: ``sim.presets.kernels.KERNELS``, fitted by ``benchmarks/gpu/fit_kernel_terms.py`` to
  the TensorRT-LLM kernel timings that ship in aiconfigurator-core 0.12.0 (GEMMs of Llama-3 8B/70B/
  405B layers at tp 1-8, custom all-reduce, context and decode attention).
- AMD Instinct (``MEASURED``): the published microbenchmarks cited next to each number.
- A GPU with no measurement of its own borrows a sibling's (``BORROWED``: same compute die).
- MoE expert GEMMs: ``sim.presets.moe_kernels.MOE_KERNELS``, fitted by
  ``benchmarks/gpu/fit_moe_terms.py`` to the same package's TensorRT-LLM MoE tables, with the
  routing imbalance its generic MoE model assumes (power law, alpha 1.2).

``terms(gpu, weight_dtype, kv_dtype, tp, layer_params_per_gpu)`` turns them into the Setup's terms
for one instance. The step these terms describe, per layer and per GPU:

    GEMMs       ||2 m S / (peak e(S)), B / (hbm u)||_p + c      e(S) = e_inf S / (S + s_half)
    attention   prefill FLOPs at attn_mfu of peak; the KV read at kv_util of HBM; >= attn_floor_s
    all-reduce  2 per layer (tensor parallelism only), each read in its measured table at the
                step's own message size (``allreduce_table``; AMD: alpha + bytes / beta)
    the rest    the memory-bound kernels between the GEMMs, bytes per token at a measured fraction
                of HBM (derived in ``sim.presets.elementwise``, not from these tables)

(S, B = the layer's parameters and their bytes on one GPU, m = the step's tokens; ||x, y||_p =
(x**p + y**p)**(1/p), fitted per GPU and dtype: p = 2-4 where the measured GEMMs pass gradually
from streaming their weights to compute-bound, so a step of a few hundred tokens reaches less of
the compute peak than a large one, p = 0 for the hard max). So a small
per-GPU slice (a small model at high tp) runs its GEMMs less efficiently, and every layer pays fixed
kernel times that do not shrink with tp: the two reasons a TP-8 instance is slower than its
datasheet suggests.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.presets.kernels import KERNELS
from sim.presets.moe_kernels import MOE_KERNELS

GIB = 2 ** 30

# AMD Instinct: no per-shape kernel tables are published; these are the microbenchmarks that are.
# Where a quantity has no AMD measurement (the GEMM fixed time c, the size s_half at which
# efficiency halves, the decode-attention floor) the H100's is used and says so.
_H100 = KERNELS["h100-sxm"]
MEASURED = {
    "mi300x": {
        "memory": 192 * GIB,
        # Dense peaks of the MI300X data sheet (the fractions below are of these).
        "peak": {"bf16": 1307.4e12, "fp8": 2614.9e12},
        "hbm": 5.3e12,
        "gemm": {
            # BF16: PyTorch matmul (hipBLASLt) 548 TFLOP/s = 0.42 of peak (gau-nernst/learn-cuda,
            # MI300X README); FP8: hipBLASLt 8192^3 1159 TFLOP/s = 0.44 (Azure AI-benchmarking-guide,
            # ND MI300X v5). u: STREAM copy 4.11 TB/s = 0.78 of 5.3 TB/s (same Azure guide).
            # The roofline exponent p (how gradually a GEMM passes from weight streaming to compute
            # as the step's tokens grow) is the H100's too: no per-shape AMD table measures it.
            "bf16": dict(e_inf=0.42, s_half=_H100["gemm"]["bf16"]["s_half"], u=0.78,
                         c_s=_H100["gemm"]["bf16"]["c_s"], p=_H100["gemm"]["bf16"]["p"]),
            "fp8": dict(e_inf=0.44, s_half=_H100["gemm"]["fp8"]["s_half"], u=0.78,
                        c_s=_H100["gemm"]["fp8"]["c_s"], p=_H100["gemm"]["fp8"]["p"]),
        },
        # RCCL all-reduce, 8 GPUs, graph mode (ROCm blog on RCCL and xGMI): 1 MB in 19.4 us and
        # 16 MB in 148.8 us give alpha 10.8 us, beta 121 GB/s; tp 2 and 4 are not published.
        "allreduce": {2: (10.8e-6, 121e9), 4: (10.8e-6, 121e9), 8: (10.8e-6, 121e9)},
        # FlashAttention-2 forward, head dim 64, 8K tokens: 328.6 TFLOP/s = 0.25 of BF16 peak (Azure).
        "attn_mfu": {"bf16": 0.25, "fp8": 0.25},
        "kv_util": {"bf16": 0.78, "fp8": 0.78},                  # STREAM, as for the weights
        "attn_floor_s": _H100["attn_floor_s"],
    },
}
BORROWED = {"gh200": "h100-sxm", "mi325x": "mi300x"}      # same compute die, other memory
DTYPE_TABLE = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp4": "fp4"}


@dataclass(frozen=True)
class Terms:
    """The Setup fields one instance's kernels give (see the module docstring)."""

    mfu: float                   # of the Setup's peak_flops (the GPU preset's datasheet peak)
    bandwidth_util: float        # of the GPU preset's datasheet bandwidth
    kv_bandwidth_ratio: float    # KV-read speed relative to the weight read
    attn_mfu: float
    layer_fixed_s: float         # per layer: GEMM launches + the decode-attention floor
    roofline_p: int              # the GEMMs' roofline exponent (Setup.roofline_p; 0 = the hard max)
    allreduce_alpha_s: float     # per all-reduce (0 at tp 1)
    allreduce_beta: float        # bytes/s of one all-reduce (inf at tp 1)


def memory(gpu: str, datasheet: float) -> float:
    """Bytes per GPU as the driver reports them (a table of the GPU's own), else the datasheet's."""
    own = KERNELS.get(gpu) or MEASURED.get(gpu)
    return float(own["memory"]) if own else float(datasheet)


def table(gpu: str) -> dict:
    key = BORROWED.get(gpu, gpu)
    if key in KERNELS:
        return KERNELS[key]
    if key in MEASURED:
        return MEASURED[key]
    raise ValueError(f"no kernel measurements for gpu {gpu!r}")


@dataclass(frozen=True)
class Experts:
    """A layer's routed experts, per GPU, for ``terms``: the shape's key in ``MOE_KERNELS``, the
    parameters one token multiplies (top-k experts) and those the step streams (every expert)."""

    shape: str
    active_params: float
    all_params: float


def moe_shape(hidden: int, intermediate: int, experts: int, topk: int) -> str:
    """The key of an expert shape in ``sim.presets.moe_kernels.MOE_KERNELS``."""
    return f"{hidden}x{intermediate}/e{experts}k{topk}"


def terms(gpu: str, datasheet_peak: float, datasheet_hbm: float, weight_dtype: str, kv_dtype: str,
          tp: int, layer_params_per_gpu: float, experts: Experts | None = None) -> Terms:
    """Efficiency terms for ``tp`` GPUs of ``gpu`` running layers of ``layer_params_per_gpu``
    parameters each per GPU, as fractions of the GPU preset's own datasheet figures.

    ``experts``: the layer's routed experts (an MoE model). Where the MoE kernel tables measure
    that shape on this GPU (``MOE_KERNELS``: grouped GEMMs with routing imbalance), the experts run
    at their own fitted efficiency, weight-streaming speed, exponent and fixed time, and the rest of
    the layer (attention projections, router) at the dense GEMMs'; the Setup's single ``mfu`` and
    bandwidth are then the FLOP- and byte-weighted harmonic means of the two, and its roofline
    exponent the experts' (they carry most of the FLOPs and nearly all the bytes)."""
    t = table(gpu)
    dtype = DTYPE_TABLE[weight_dtype]
    if dtype not in t["gemm"]:
        raise ValueError(f"no {weight_dtype} GEMM measurements for gpu {gpu!r}")
    g = t["gemm"][dtype]
    s = float(layer_params_per_gpu)
    achieved_flops = t["peak"][dtype] * g["e_inf"] * s / (s + g["s_half"])
    achieved_bw = t["hbm"] * g["u"]
    p, fixed = int(g.get("p", 0)), g["c_s"]
    moe = MOE_KERNELS.get(BORROWED.get(gpu, gpu), {}).get(dtype, {}).get(experts.shape) if experts else None
    if moe is not None:
        rest = max(0.0, s - experts.active_params)          # dense part of the layer, per GPU
        e_rest = g["e_inf"] * rest / (rest + g["s_half"]) if rest else 1.0
        e_moe = moe["e_inf"] * experts.active_params / (experts.active_params + moe["s_half"])
        achieved_flops = t["peak"][dtype] * s / (rest / e_rest + experts.active_params / e_moe)
        streamed = rest + experts.all_params                # every expert's weights are read
        achieved_bw = t["hbm"] * streamed / (rest / g["u"] + experts.all_params / moe["u"])
        p, fixed = int(moe["p"]), g["c_s"] + moe["c_s"]
    kv = DTYPE_TABLE[kv_dtype] if DTYPE_TABLE[kv_dtype] in t["kv_util"] else "bf16"
    attn = t["attn_mfu"].get(kv, t["attn_mfu"].get("bf16"))      # of the peak in the KV's dtype
    alpha, beta = (0.0, float("inf")) if tp == 1 else _allreduce(t["allreduce"], tp, gpu)
    return Terms(mfu=min(1.0, achieved_flops / datasheet_peak),
                 bandwidth_util=min(1.0, achieved_bw / datasheet_hbm),
                 kv_bandwidth_ratio=t["kv_util"][kv] / g["u"],
                 attn_mfu=min(1.0, attn * t["peak"].get(kv, t["peak"]["bf16"]) / datasheet_peak),
                 layer_fixed_s=fixed + t["attn_floor_s"], roofline_p=p,
                 allreduce_alpha_s=alpha, allreduce_beta=beta)


def allreduce_table(gpu: str, tp: int) -> tuple | None:
    """One all-reduce's measured time at ``tp``, ((message bytes, seconds), ...) by size, or None
    where the GPU has no table (AMD: the line of ``terms`` stands). A tp the table lacks takes the
    nearest measured one (the larger on a tie), as ``terms`` does."""
    if tp == 1:
        return None
    measured = table(gpu).get("allreduce_us")
    if not measured:
        return None
    us = _allreduce(measured, tp, gpu)
    return tuple((float(b), t * 1e-6) for b, t in us)


def _allreduce(measured: dict, tp: int, gpu: str):
    if tp in measured:
        return measured[tp]
    known = sorted(measured)
    if not known:
        raise ValueError(f"no all-reduce measurements for gpu {gpu!r}")
    nearest = min(known, key=lambda k: (abs(k - tp), -k))
    return measured[nearest]
