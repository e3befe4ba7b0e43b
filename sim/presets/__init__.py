"""Presets: a Setup for a named model on a named GPU, from shapes, dtypes and datasheets.

    from sim import presets
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")

How each Setup field is derived (every one can be overridden by keyword):

- ``params``: the parameters one token is multiplied by (an MoE's active ones: top-k + shared
  experts); ``weight_bytes``: all parameters x bytes of ``weight_dtype`` (an MoE step at load touches
  every expert, so all are read);
- ``kv_bytes_per_token``: K and V of every layer's KV heads (at least one KV head per GPU: heads are
  replicated when tp > kv_heads), or MLA's latent (kv_lora_rank + rope dim per layer), which every
  tensor-parallel GPU keeps a full copy of; in bytes of ``kv_dtype`` (default: ``weight_dtype``);
- ``kv_capacity_tokens``: (tp x GPU memory x ``mem_util`` - weight_bytes) / kv_bytes_per_token;
- ``peak_flops``: tp x the GPU's dense FLOP/s in the weights' dtype (FP8 weights: FP8 matmuls);
  ``mfu``: the fraction of it the step's matmuls reach (default ``MFU``);
- ``bandwidth``: tp x HBM bandwidth x ``bandwidth_util`` (default ``BANDWIDTH_UTIL``);
- ``kv_serial``: the fraction of the KV-cache read added after the compute bound instead of hidden
  under it (default ``KV_SERIAL``: attention kernels run between the GEMMs);
- ``step_overhead``: ``BASE_OVERHEAD_S`` (scheduling, launches) plus, with tp > 1, two all-reduces
  per layer at ``ALLREDUCE_LATENCY_S`` each; ``comm_s_per_token``: the same all-reduces' data, each
  token's hidden state in BF16, at ``LINK_UTIL`` of one direction of the GPU's link: a ring moves
  2 (tp-1)/tp of it per GPU each way, an NVSwitch that reduces in the switch (``GPU.nvls``) once.

Passing ``step_overhead`` selects the handbook's step rule: the given overhead is the whole per-step
overhead, TP communication included (as the chapter's 1.5 ms is), so no per-token communication is
added unless ``comm_s_per_token`` is given too, and the KV read stays under the roofline's max
(``kv_serial`` 0) unless ``kv_serial`` is given too. So ``instance("llama-3-70b", "h100-sxm", tp=8,
weight_dtype="fp8", kv_dtype="fp8", mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)`` is the
chapter's instance.

Calibration of the defaults (no constant is fitted to a benchmark row):

- ``MFU = 0.7``: large GEMMs on one H200 measured 0.70-0.79 of dense BF16 peak and 0.69-0.75 of
  dense FP8 peak (``torch._scaled_mm``), 0.60-0.67 at 256 rows (benchmarks/gpu/README.md,
  h200-2026-11-30.json); serving engines fuse the elementwise work around them. Peaks are the
  datasheets' dense figures (sim/presets/gpus.py).
- ``BANDWIDTH_UTIL = 0.75``: a whole graph-captured decode step of 8 Llama-70B-shaped layers read
  weights + KV at 0.74-0.76 of the 4.8 TB/s datasheet, and skinny decode GEMMs streamed weights at
  0.70-0.79 (same measurements).
- ``KV_SERIAL = 1.0``: attention streams the KV cache between the GEMMs, so its time adds. The same
  8-layer decode step, graph-captured, at (batch, context) = (128, 2048), (256, 1024), (256, 2048),
  (256, 4096), (512, 1024), (512, 2048), (128, 8192) took 6.23, 8.11, 10.03, 13.60, 15.49, 18.68,
  11.89 ms (tests/validation/h200_decode_steps.json); with MFU 0.7 and 0.75 of 4.8 TB/s the KV
  read added after the GEMMs predicts them within -8 % to +12 % (mean |error| 6 %), the KV read
  hidden under the compute bound (the handbook's max) within -35 % to +12 % (mean 17 %).
- ``BASE_OVERHEAD_S = 1 ms``: scheduling and sampling on the host per step; CUDA graphs remove the
  launch cost (measured ~20 us per layer eager vs graph).
- ``ALLREDUCE_LATENCY_S``, ``LINK_UTIL``: NVLink all-reduces of a few MB reach roughly 0.7-0.8 of
  the link in NCCL's bus-bandwidth terms; with in-switch reduction each GPU's traffic is its data
  once each way, about half a ring's at tp = 8. Engines may overlap part of it; none is assumed.

tests/validation/README.md compares the result with published MLPerf Inference results.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import fields

from sim.presets import efficiency
from sim.presets.gpus import GPU, GPUS
from sim.presets.models import MODELS, Model
from sim.setup import Setup

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp4": 0.5}
MAX_TP = 8                    # one node: the GPU-to-GPU link modelled is the node's (NVLink, IF, PCIe)

# The handbook rule's defaults for factors a caller leaves out (measured on one H200,
# benchmarks/gpu/README.md); the calibrated rule takes its factors from sim.presets.efficiency.
MFU = 0.7                     # fraction of dense peak reached by the step's matmuls
BANDWIDTH_UTIL = 0.75         # fraction of HBM bandwidth reached by the weight and KV reads
# The calibrated rule's constants that no kernel table gives:
KV_SERIAL = 1.0               # the KV read adds to the step after the matmuls (attention runs between them)
BASE_OVERHEAD_S = 1.0e-3      # host work per step: scheduling, sampling, output processing
RUNTIME_RESERVE_BYTES = 3.5 * 2**30   # per GPU: activations, CUDA graphs, communication buffers
ACTIVATION_BYTES = 2          # all-reduces carry BF16 activations

ALIASES = {"h100": "h100-sxm", "a100": "a100-80gb", "h200-sxm": "h200", "b200-sxm": "b200",
           "llama3-8b": "llama-3-8b", "llama3-70b": "llama-3-70b", "llama-3.1-70b": "llama-3-70b",
           "llama-3.1-8b": "llama-3-8b", "llama3.1-405b": "llama-3.1-405b"}


def model(name: str) -> Model:
    """The model preset called ``name`` (case-insensitive); unknown names suggest the closest."""
    return MODELS[_resolve("model", name, MODELS)]


def gpu(name: str) -> GPU:
    """The GPU preset called ``name`` (case-insensitive); unknown names suggest the closest."""
    return GPUS[_resolve("gpu", name, GPUS)]


def instance(model_name: str, gpu_name: str, *, tp: int = 1, weight_dtype: str = "bf16",
             kv_dtype: str | None = None, mem_util: float = 0.9, mfu: float | None = None,
             bandwidth_util: float | None = None, step_overhead: float | None = None,
             comm_s_per_token: float | None = None, kv_serial: float | None = None,
             max_num_batched_tokens: int = 8192,
             max_num_seqs: int = 512, **overrides) -> Setup:
    """A ``Setup`` for ``model_name`` served with tensor parallelism ``tp`` on ``gpu_name`` GPUs.

    Two rules (see the module docstring): without ``step_overhead`` the calibrated step model, every
    efficiency term from kernel measurements (``sim.presets.efficiency``); with it, the handbook's
    roofline with the factors given. ``overrides`` replace any derived Setup field
    (``weight_bytes=...``, ``kv_capacity_tokens=...``). Raises ValueError with the reason for an
    unknown name, a dtype the GPU lacks, a tp the model's heads do not divide, or weights that do
    not fit in ``tp`` GPUs.
    """
    m, g = model(model_name), gpu(gpu_name)
    if isinstance(tp, bool) or not isinstance(tp, int) or not 1 <= tp <= MAX_TP:
        raise ValueError(f"tp must be a whole number in [1, {MAX_TP}] (one node), got {tp!r}")
    if m.heads % tp:
        raise ValueError(f"tp={tp} does not divide {m.name}'s {m.heads} attention heads")
    kv_dtype = weight_dtype if kv_dtype is None else kv_dtype
    for name, value in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if value not in DTYPE_BYTES:
            raise ValueError(f"{name} must be one of {sorted(DTYPE_BYTES)}, got {value!r}")
    peak = g.flops(weight_dtype)                  # raises for FP8/FP4 on a GPU without it
    if not (isinstance(mem_util, (int, float)) and 0 < mem_util <= 1):
        raise ValueError(f"mem_util must be in (0, 1], got {mem_util!r}")
    if bandwidth_util is not None and not (isinstance(bandwidth_util, (int, float)) and 0 < bandwidth_util <= 1):
        raise ValueError(f"bandwidth_util must be in (0, 1], got {bandwidth_util!r}")
    handbook = step_overhead is not None

    weight_bytes = m.total_params * DTYPE_BYTES[weight_dtype]
    kv_bytes = kv_bytes_per_token(m, tp, kv_dtype)
    if handbook:                                  # the chapter's memory: datasheet GB x mem_util
        usable = g.memory * mem_util
    else:                                         # what the driver reports, less the runtime's share
        usable = efficiency.memory(gpu_key(gpu_name), g.memory) * mem_util - RUNTIME_RESERVE_BYTES
    if weight_bytes / tp >= usable:
        need = math.ceil(weight_bytes / usable)
        raise ValueError(
            f"{m.name} in {weight_dtype} does not fit at tp={tp} on {g.name}: {weight_bytes / 1e9:.1f} GB of "
            f"weights is {weight_bytes / tp / 1e9:.1f} GB per GPU, and {g.memory / 1e9:.0f} GB x mem_util "
            f"{mem_util} leaves {usable / 1e9:.1f} GB; it needs tp >= {need} GPUs (with room for KV), "
            "a smaller weight_dtype, or a larger GPU")
    kv_capacity = int((tp * usable - weight_bytes) / kv_bytes)

    if handbook:
        values = dict(params=float(m.active_params), mfu=MFU if mfu is None else mfu,
                      bandwidth=tp * g.bandwidth * (BANDWIDTH_UTIL if bandwidth_util is None else bandwidth_util),
                      step_overhead=step_overhead,
                      comm_s_per_token=0.0 if comm_s_per_token is None else comm_s_per_token,
                      kv_serial=0.0 if kv_serial is None else kv_serial)
    else:
        values = calibrated(m, g, gpu_key(gpu_name), tp, weight_dtype, kv_dtype)
        if mfu is not None:
            values["mfu"] = mfu
        if bandwidth_util is not None:
            values["bandwidth"] = tp * g.bandwidth * bandwidth_util
        if comm_s_per_token is not None:
            values["comm_s_per_token"] = comm_s_per_token
        if kv_serial is not None:
            values["kv_serial"] = kv_serial
    values.update(weight_bytes=float(weight_bytes), kv_bytes_per_token=float(kv_bytes),
                  kv_capacity_tokens=kv_capacity, peak_flops=tp * peak,
                  max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    known = {f.name for f in fields(Setup)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown instance() keyword(s) {sorted(unknown)}; Setup fields are {sorted(known)}")
    values.update(overrides)
    if values["kv_capacity_tokens"] < 1:
        raise ValueError(f"{m.name} at tp={tp} on {g.name} leaves no memory for the KV cache")
    return Setup(**values)


def calibrated(m: Model, g: GPU, key: str, tp: int, weight_dtype: str, kv_dtype: str) -> dict:
    """The calibrated step model's Setup fields (besides sizes and peaks), from kernel measurements."""
    layer_params = (m.active_params - 2 * m.embedding_params) / m.layers
    t = efficiency.terms(key, g.flops(weight_dtype), g.bandwidth, weight_dtype, kv_dtype, tp, layer_params / tp)
    allreduces = 2 * m.layers if tp > 1 else 0          # after attention and after the MLP
    return dict(
        params=float(m.active_params - m.embedding_params),
        mfu=t.mfu, bandwidth=tp * g.bandwidth * t.bandwidth_util, kv_serial=KV_SERIAL,
        kv_bandwidth_ratio=t.kv_bandwidth_ratio,
        attn_flops_per_pair=float(m.attention_flops_per_pair()), attn_mfu=t.attn_mfu,
        step_overhead=BASE_OVERHEAD_S + m.layers * t.layer_fixed_s + allreduces * t.allreduce_alpha_s,
        comm_s_per_token=allreduces * m.hidden * ACTIVATION_BYTES / t.allreduce_beta if tp > 1 else 0.0)


def gpu_key(name: str) -> str:
    return _resolve("gpu", name, GPUS)


def kv_bytes_per_token(m: Model, tp: int, kv_dtype: str) -> int:
    """KV-cache bytes one token occupies over the whole instance (see the module docstring)."""
    size = DTYPE_BYTES[kv_dtype]
    if m.kv_lora_rank:
        return tp * m.kv_values_per_token() * size       # every GPU keeps the whole latent
    heads = max(m.kv_heads, tp)                           # at least one KV head per GPU
    return 2 * m.layers * heads * m.head_dim * size


def _resolve(kind: str, name, table: dict) -> str:
    if not isinstance(name, str):
        raise ValueError(f"{kind} must be a name (one of {sorted(table)}), got {name!r}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = ALIASES.get(key, key)
    if key in table:
        return key
    close = difflib.get_close_matches(key, list(table) + list(ALIASES), n=6, cutoff=0.4)
    close = list(dict.fromkeys(ALIASES.get(c, c) for c in close))[:3]
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(f"unknown {kind} {name!r}{hint} Known: {', '.join(sorted(table))}")
