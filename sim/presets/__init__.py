"""Presets: a Setup for a named model on a named GPU, from shapes, dtypes, datasheets and kernel timings.

    from sim import presets
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")

Two rules, chosen by whether ``step_overhead`` is given:

**Calibrated** (the default): every efficiency term comes from kernel measurements
(``sim.presets.efficiency``: TensorRT-LLM kernel tables for NVIDIA GPUs, published microbenchmarks
for AMD), none from a serving benchmark:

- ``params``: the parameters one token is multiplied by (an MoE's active ones), less the input
  embedding (a lookup, no FLOPs); ``weight_bytes``: all parameters x bytes of ``weight_dtype``;
- ``mfu``: the GEMMs' fitted efficiency at this per-GPU slice size, e_inf S / (S + s_half) with S
  the layer's parameters per GPU, as a fraction of the datasheet peak in ``weight_dtype``; an MoE
  model's experts at the MoE kernel tables' own fit (grouped GEMMs with routing imbalance,
  ``sim.presets.moe_kernels``), averaged with the rest of the layer by FLOPs;
- ``roofline_p``: the GEMM fit's exponent (2, 4 or 8: FLOPs and weight streaming combine as a
  p-norm, so a step of a few hundred tokens runs below both bounds, as the kernel tables show);
- ``bandwidth``: tp x the weight-streaming bandwidth the GEMM fit found; ``kv_bandwidth_ratio``:
  decode attention's KV-read speed relative to it; ``kv_serial`` = 1 (attention runs between the
  GEMMs, so its KV read adds to the step);
- ``attn_flops_per_pair`` / ``attn_mfu``: prefill attention's FLOPs per (query, key) pair and its
  measured efficiency;
- ``step_overhead``: ``BASE_OVERHEAD_S`` (host work per step) + layers x (the GEMMs' fixed launch
  time + the decode-attention floor);
  ``host_s_per_seq``: ``HOST_S_PER_SEQ`` (host work per decoding sequence: scheduling, sampling,
  output). Those two host terms are the only constants fitted to the whole validation set (no
  kernel table measures them; see tests/validation/README.md);
- ``comm_curve``: the step's tensor-parallel all-reduces (two per layer) at its own message size
  (its tokens x the BF16 hidden state), read in the measured all-reduce table
  (``efficiency.allreduce_table``; where a GPU has none, AMD's, the line: latency in
  ``step_overhead``, bytes over bandwidth in ``comm_s_per_token``);
- ``comm_s_per_token``: besides that line, the memory-bound kernels between the GEMMs (residual
  adds and RMSNorm, RoPE with the KV write, activation quantisation), derived from their bytes and
  the fraction of HBM such kernels reach (``sim.presets.elementwise``, ``elementwise_s_per_token``);
- ``kv_capacity_tokens``: (tp x (memory as the driver reports it x ``mem_util`` -
  ``RUNTIME_RESERVE_BYTES``) - weight_bytes) / kv_bytes_per_token.

**Handbook** (``step_overhead`` given): the chapter's roofline with the factors given (``mfu``,
``bandwidth_util``; defaults ``MFU``, ``BANDWIDTH_UTIL``), datasheet memory x ``mem_util``, the
whole active parameter count, the given overhead standing for all communication (no per-token
term unless ``comm_s_per_token`` is given), the KV read under the roofline's max (``kv_serial`` 0
unless given) and no attention FLOPs. So ``instance("llama-3-70b", "h100-sxm", tp=8,
weight_dtype="fp8", kv_dtype="fp8", mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)`` is the
chapter's instance, and gives the chapter's plan exactly.

Both: ``kv_bytes_per_token`` is K and V of every layer's KV heads (at least one KV head per GPU:
heads are replicated when tp > kv_heads), or MLA's latent, which every tensor-parallel GPU keeps a
full copy of, in bytes of ``kv_dtype`` (default: ``weight_dtype``; BF16 for weight-only ``int4``).
The formats (bf16, fp16, fp8, int8 W8A8, int4 W4A16 weight-only, fp4) and which kernel measurements
stand for each: ``sim.presets.dtypes``.

How good the calibrated rule is: ``python benchmarks/bench_validation.py`` (tests/validation/),
and ``uncertainty(gpu, tp)`` gives plans the matching slice's residual range.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import fields

from sim.presets import efficiency, elementwise
from sim.presets.dtypes import DTYPE_BYTES, KV_FORMATS, WEIGHT_FORMATS, default_kv_dtype, kv_format, weight_format
from sim.presets.gpus import GPU, GPUS
from sim.presets.models import MODELS, Model
from sim.setup import Setup
from sim.validate import check_number

MAX_TP = 8                    # one node: the GPU-to-GPU link modelled is the node's (NVLink, IF, PCIe)

# The handbook rule's defaults for factors a caller leaves out (measured on one H200,
# benchmarks/gpu/README.md); the calibrated rule takes its factors from sim.presets.efficiency.
MFU = 0.7                     # fraction of dense peak reached by the step's matmuls
BANDWIDTH_UTIL = 0.75         # fraction of HBM bandwidth reached by the weight and KV reads
# The calibrated rule's constants that no kernel table gives:
KV_SERIAL = 1.0               # the KV read adds to the step after the matmuls (attention runs between them)
# Host work per step (scheduling, sampling, output), fitted to the validation set together
# (benchmarks/bench_validation.py): a fixed part and a part per decoding sequence. Vidur's profile
# of vLLM's host work on an A100 (microsoft/vidur data/profiling/a100/cpu_overheads.csv) grows by
# 37.5 us per sequence where nothing overlaps it; engines that overlap host and GPU work
# (TensorRT-LLM's overlap scheduler, SGLang's zero-overhead scheduler, vLLM's async output
# processing) pay less, and the fit lands below that figure.
BASE_OVERHEAD_S = 1e-3            # fitted with HOST_S_PER_SEQ (bench_validation: the grid point of least MAPE)
HOST_S_PER_SEQ = 10e-6
RUNTIME_RESERVE_BYTES = 3.5 * 2**30   # per GPU: activations, CUDA graphs, communication buffers
ACTIVATION_BYTES = 2          # all-reduces carry BF16 activations

# On-demand cloud prices per GPU-hour, USD: rough public list prices in 2024-25 (assumptions for
# ranking, not quotes; pass your own to plan / sweep / fleet). H100 at the chapter's $2.5. GPUs
# without a price here need one given (``gpu_hour_usd(name, prices)``, ``--gpu-hour-usd``).
GPU_HOUR_USD = {"a100-80gb": 1.8, "h100-sxm": 2.5, "h200": 3.5, "b200": 5.0, "l40s": 1.0, "mi300x": 2.5}

ALIASES = {"h100": "h100-sxm", "a100": "a100-80gb", "h200-sxm": "h200", "b200-sxm": "b200",
           "llama3-8b": "llama-3-8b", "llama3-70b": "llama-3-70b", "llama-3.1-70b": "llama-3-70b",
           "llama-3.1-8b": "llama-3-8b", "llama3.1-405b": "llama-3.1-405b"}


def model(name: str) -> Model:
    """The model preset called ``name`` (case-insensitive); unknown names suggest the closest."""
    return MODELS[model_key(name)]


def gpu(name: str) -> GPU:
    """The GPU preset called ``name`` (case-insensitive); unknown names suggest the closest."""
    return GPUS[gpu_key(name)]


def instance(model_name: str, gpu_name: str, *, tp: int = 1, weight_dtype: str = "bf16",
             kv_dtype: str | None = None, mem_util: float = 0.9, mfu: float | None = None,
             bandwidth_util: float | None = None, step_overhead: float | None = None,
             comm_s_per_token: float | None = None, kv_serial: float | None = None,
             max_num_batched_tokens: int = 8192,
             max_num_seqs: int = 512, profile=None, engine: str | None = None, **overrides) -> Setup:
    """A ``Setup`` for ``model_name`` served with tensor parallelism ``tp`` on ``gpu_name`` GPUs.

    Two rules (see the module docstring): without ``step_overhead`` the calibrated step model, every
    efficiency term from kernel measurements (``sim.presets.efficiency``); with it, the handbook's
    roofline with the factors given. ``overrides`` replace any derived Setup field
    (``weight_bytes=...``, ``kv_capacity_tokens=...``). Raises ValueError with the reason for an
    unknown name, a dtype the GPU lacks, a tp the model's heads do not divide, or weights that do
    not fit in ``tp`` GPUs. ``comm_s_per_token`` given to the calibrated rule replaces the measured
    all-reduce's time per token (and its table, ``comm_curve``, where the GPU has one); the
    elementwise kernels' time per token (``elementwise_s_per_token``) is added to it.

    ``profile`` (a path or dict written by ``python -m sim calibrate``, see ``sim.profile``) puts the
    step-model terms fitted to this deployment's own benchmark runs in place of the calibrated ones;
    it must have been fitted on the same model, GPU, tp and dtypes.

    ``engine`` ("vllm", "sglang" or "trtllm"; default None: the handbook's whole reservation) sets
    how the instance admits requests at saturation, that engine's KV policy
    (``sim.kv.admission_policy``): vLLM's paged blocks with recompute preemption, SGLang's
    new-token-ratio reservation with retraction, TensorRT-LLM's GUARANTEED_NO_EVICT reservation.
    """
    key = gpu_key(gpu_name)
    m, g = model(model_name), GPUS[key]
    if isinstance(tp, bool) or not isinstance(tp, int) or not 1 <= tp <= MAX_TP:
        raise ValueError(f"tp must be a whole number in [1, {MAX_TP}] (one node), got {tp!r}")
    if m.heads % tp:
        raise ValueError(f"tp={tp} does not divide {m.name}'s {m.heads} attention heads")
    wf = weight_format(weight_dtype)
    if kv_dtype is None:                          # the weights' format, or BF16 for weight-only INT4
        kv_dtype = default_kv_dtype(weight_dtype)
    kv_format(kv_dtype)
    peak = g.flops(wf.compute)                    # raises for FP8/FP4 on a GPU without it
    if not (isinstance(mem_util, (int, float)) and 0 < mem_util <= 1):
        raise ValueError(f"mem_util must be in (0, 1], got {mem_util!r}")
    if bandwidth_util is not None and not (isinstance(bandwidth_util, (int, float)) and 0 < bandwidth_util <= 1):
        raise ValueError(f"bandwidth_util must be in (0, 1], got {bandwidth_util!r}")
    handbook = step_overhead is not None

    weight_bytes = m.total_params * wf.bytes
    kv_bytes = kv_bytes_per_token(m, tp, kv_dtype)
    if handbook:                                  # the chapter's memory: datasheet GB x mem_util
        usable = g.memory * mem_util
    else:                                         # what the driver reports, less the runtime's share
        usable = efficiency.memory(key, g.memory) * mem_util - RUNTIME_RESERVE_BYTES
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
        values = calibrated(m, g, key, tp, weight_dtype, kv_dtype, allreduce_s_per_token=comm_s_per_token)
        if mfu is not None:
            values["mfu"] = mfu
        if bandwidth_util is not None:
            values["bandwidth"] = tp * g.bandwidth * bandwidth_util
        if kv_serial is not None:
            values["kv_serial"] = kv_serial
    values.update(weight_bytes=float(weight_bytes), kv_bytes_per_token=float(kv_bytes),
                  kv_capacity_tokens=kv_capacity, peak_flops=tp * peak,
                  max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    if profile is not None:                       # terms fitted to this deployment's own runs (sim.profile)
        if handbook or mfu is not None or bandwidth_util is not None:
            raise ValueError("profile= sets mfu, bandwidth and step_overhead: pass either a profile or "
                             "mfu / bandwidth_util / step_overhead, not both")
        from sim import profile as profiles
        values = profiles.apply(profile, values, dict(model=_resolve("model", model_name, MODELS), gpu=key, tp=tp,
                                                      weight_dtype=weight_dtype, kv_dtype=kv_dtype))
    known = {f.name for f in fields(Setup)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown instance() keyword(s) {sorted(unknown)}; Setup fields are {sorted(known)}")
    if engine is not None:
        if "kv" in overrides:
            raise ValueError("pass engine= (an engine's admission policy) or kv= (a KV policy), not both")
        from sim.kv import admission_policy
        values["kv"] = admission_policy(engine)
    values.update(overrides)
    if values["kv_capacity_tokens"] < 1:
        raise ValueError(f"{m.name} at tp={tp} on {g.name} leaves no memory for the KV cache")
    return Setup(**values)


def calibrated(m: Model, g: GPU, key: str, tp: int, weight_dtype: str, kv_dtype: str,
               allreduce_s_per_token: float | None = None) -> dict:
    """The calibrated step model's Setup fields (besides sizes and peaks), from kernel measurements.

    A format without kernel measurements of its own uses its stand-in's (``sim.presets.dtypes``):
    its GEMMs reach the stand-in's fraction of peak, applied to its own tensor cores' peak (INT8 W8A8
    on an A100: BF16's fractions of the INT8 peak); attention keeps its own speed, re-expressed as a
    fraction of the Setup's peak. ``allreduce_s_per_token`` (``instance``'s ``comm_s_per_token``)
    replaces the measured all-reduce's time per token, its table included; the elementwise
    kernels' time is added to whichever all-reduce time applies."""
    wf, kvf = WEIGHT_FORMATS[weight_dtype], KV_FORMATS[kv_dtype]
    measured = efficiency.table(key)
    gemm = wf.table if wf.table in measured["gemm"] else "bf16"
    kv = kvf.table if kvf.table in measured["kv_util"] else "bf16"
    layer_params = (m.active_params - 2 * m.embedding_params) / m.layers
    t = efficiency.terms(key, g.flops(gemm), g.bandwidth, gemm, kv, tp, layer_params / tp, _experts(m, tp))
    attn_mfu = t.attn_mfu * g.flops(gemm) / g.flops(wf.compute)
    if kvf.compute != kv:                         # INT8 KV: attention matmuls in BF16, not FP8
        attn_mfu *= g.flops(kvf.compute) / g.flops(kv)
    allreduces = 2 * m.layers if tp > 1 else 0          # after attention and after the MLP
    between = elementwise.seconds_per_token(m, key, g.bandwidth, tp, weight_dtype, kv_dtype)
    values = dict(
        params=float(m.active_params - m.embedding_params),
        mfu=t.mfu, bandwidth=tp * g.bandwidth * t.bandwidth_util, kv_serial=KV_SERIAL,
        kv_bandwidth_ratio=t.kv_bandwidth_ratio, roofline_p=float(t.roofline_p),
        host_s_per_seq=HOST_S_PER_SEQ,
        attn_flops_per_pair=float(m.attention_flops_per_pair()), attn_mfu=min(1.0, attn_mfu),
        step_overhead=BASE_OVERHEAD_S + m.layers * t.layer_fixed_s + allreduces * t.allreduce_alpha_s,
        comm_s_per_token=(allreduces * m.hidden * ACTIVATION_BYTES / t.allreduce_beta if tp > 1 else 0.0)
        + between)
    measured = efficiency.allreduce_table(key, tp)
    if measured is not None:            # the table at each step's own size, in place of its line
        values.update(step_overhead=BASE_OVERHEAD_S + m.layers * t.layer_fixed_s, comm_s_per_token=between,
                      comm_curve=allreduce_curve(measured, allreduces, m.hidden * ACTIVATION_BYTES))
    if allreduce_s_per_token is not None:     # the given per-token time stands for all communication
        values["comm_s_per_token"] = allreduce_s_per_token + between
        values.pop("comm_curve", None)
    return values


def elementwise_s_per_token(model_name: str, gpu_name: str, tp: int, weight_dtype: str = "bf16",
                            kv_dtype: str | None = None) -> float:
    """The calibrated rule's seconds per computed token for the kernels between the GEMMs (norms,
    RoPE with the KV write, activation quantisation; ``sim.presets.elementwise``): the part of its
    ``comm_s_per_token`` that is not an all-reduce."""
    key = gpu_key(gpu_name)
    if kv_dtype is None:
        kv_dtype = default_kv_dtype(weight_dtype)
    weight_format(weight_dtype), kv_format(kv_dtype)
    return elementwise.seconds_per_token(model(model_name), key, GPUS[key].bandwidth, tp, weight_dtype, kv_dtype)


def allreduce_curve(measured: tuple, allreduces: int, bytes_per_token: int) -> tuple:
    """``Setup.comm_curve`` of a step's ``allreduces`` all-reduces of ``bytes_per_token`` per token,
    from one all-reduce's measured ((bytes, seconds), ...): each size becomes a knot at the tokens
    that carry it, linear in bytes between sizes, continued past the largest along its last segment."""
    return tuple((size / bytes_per_token, allreduces * seconds) for size, seconds in measured)


def _experts(m: Model, tp: int):
    """The routed experts of one layer per GPU (tensor parallelism splits every expert), or None.
    Only the MoE layers' share counts: a model with dense layers too averages them in the layer."""
    if not m.is_moe:
        return None
    width = m.moe_intermediate or m.intermediate
    one = m.mlp_params(width) / tp
    moe_share = (m.layers - m.dense_layers) / m.layers
    return efficiency.Experts(efficiency.moe_shape(m.hidden, width, m.experts, m.experts_per_token),
                              moe_share * m.experts_per_token * one, moe_share * m.experts * one)


MIN_RESIDUAL_ROWS = 5      # a slice needs this many validation rows to give a range of its own


def uncertainty(gpu_name: str, tp: int):
    """The calibrated model's capacity error where it was checked, for plans' ranges: the 10th and
    90th percentiles of published / predicted throughput over the validation rows of this GPU at
    this tp, else of this GPU, else of every row (the first with >= MIN_RESIDUAL_ROWS rows)."""
    from sim.planning import Uncertainty
    from sim.presets.residuals import RANGES
    key = gpu_key(gpu_name)
    for slice_ in (f"{key}/tp{tp}", key, "all"):
        if slice_ in RANGES and RANGES[slice_][2] >= MIN_RESIDUAL_ROWS:
            low, high, rows = RANGES[slice_]
            return Uncertainty(low, high, rows, slice_)
    raise ValueError("no validation residuals: run benchmarks/bench_validation.py --write")


def gpu_key(name: str) -> str:
    """The preset key of a GPU name or alias ("H100", "h100_sxm" -> "h100-sxm")."""
    return _resolve("gpu", name, GPUS)


def model_key(name: str) -> str:
    """The preset key of a model name or alias ("Llama-3.1-70B" -> "llama-3-70b")."""
    return _resolve("model", name, MODELS)


def gpu_hour_usd(gpu_name: str, prices: dict | None = None) -> float:
    """Price per GPU-hour (USD) of ``gpu_name``: from ``prices`` (keyed by any spelling of a GPU
    name, as ``gpu()`` takes them) where it names that GPU, else from ``GPU_HOUR_USD``. Raises
    ValueError for a GPU with neither."""
    key = gpu_key(gpu_name)
    given = {}
    for name, value in (prices or {}).items():
        check_number(f"gpu_hour_usd[{name!r}]", value, 0, strict=False, note="(USD per GPU-hour)")
        given[gpu_key(name)] = float(value)
    price = given.get(key, GPU_HOUR_USD.get(key))
    if price is None:
        raise ValueError(f"no price for GPU {GPUS[key].name!r} ({key}): give one (gpu_hour_usd, "
                         f"--gpu-hour-usd); prices are known for {', '.join(sorted(GPU_HOUR_USD))}")
    return price


def describe(model_name: str, gpu_name: str, tp: int, weight_dtype: str = "bf16",
             kv_dtype: str | None = None) -> str:
    """How every command names an instance: the presets' display names, e.g.
    "Llama-3-70B on 8 x H100 SXM, weights FP8 / KV FP8"."""
    if kv_dtype is None:                          # instance()'s default
        kv_dtype = default_kv_dtype(weight_dtype)
    return (f"{model(model_name).name} on {tp} x {gpu(gpu_name).name}, "
            f"weights {weight_dtype.upper()} / KV {kv_dtype.upper()}")


def kv_bytes_per_token(m: Model, tp: int, kv_dtype: str) -> int:
    """KV-cache bytes one token occupies over the whole instance (see the module docstring)."""
    size = kv_format(kv_dtype).bytes
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
