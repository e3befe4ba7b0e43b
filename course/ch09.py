"""Chapter 09 (parallelism): tensor, pipeline, expert and context parallelism as the numbers a
design answer needs, and the chapter's panel.

- Tensor parallelism is what the simulator models: its calibrated presets read the measured
  all-reduce table per GPU and TP size at each step's message size (``sim.presets.efficiency``,
  ``Setup.comm_curve``), so the TP-1..8
  figures here (TPOT at batch 1, tokens/s per GPU within the SLOs) come from ``presets.instance``,
  ``Setup.step_time`` and ``sim.plan``. Plans are cached.
- The all-reduce algorithms (one-shot, two-shot, ring, tree, NVLink SHARP) are alpha-beta
  arithmetic, checked against the measured all-reduce the presets use.
- Pipeline, expert and context parallelism are arithmetic: the simulator has one instance on one
  node and no expert routing, so it cannot say what a pipeline's stages, a multi-node all-to-all or
  a ring of KV blocks cost. Every such figure below says which assumptions it stands on.

The service is chapter 02's: 200 QPS, 2000 tokens in, 500 out, p99 TTFT < 2 s, p99 TPOT < 50 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from course import memo, plots
from course.ch05 import SERVICE, decode_step_s, price, table
from sim import plan, presets
from sim.presets import efficiency
from course.kit import DropdownPanel, rows_html
from sim.setup import attention_pairs

__all__ = ["table", "SERVICE"]      # re-exported: the notebook prints with ch09.table

MODEL = "llama-3-70b"
TPS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CONTEXT = SERVICE["input_len"] + SERVICE["output_len"] // 2      # a decoding request's mean context
ACTIVATION_BYTES = 2                 # TP all-reduces and PP hand-offs carry BF16 activations
NIC_GBS = 50.0                       # one 400 Gb/s RDMA NIC per GPU (ConnectX-7), one direction
ROUND_ALPHA_US = 2.0                 # latency of one round of an all-reduce algorithm (an assumption)

PANEL_MODELS = ("llama-3-70b", "llama-3-8b", "qwen2.5-72b", "mixtral-8x7b", "llama-3.1-405b")
# L40S is left out: without NVLink its TP plans serve a few hundredths of a request per second and
# the rate search then takes seconds (section 1's table shows why: ~1 GB/s all-reduce at TP 8).
PANEL_GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x")


# --- all-reduce: the algorithms as alpha-beta arithmetic ---------------------------------------

ALGORITHMS = ("one_shot", "two_shot", "ring", "tree", "nvls")
TOPOLOGY_ALGORITHMS = {"pcie": ("ring", "tree"), "switch": ("one_shot", "two_shot", "ring", "tree"),
                       "nvls": ALGORITHMS}


def allreduce_us(algorithm: str, message_bytes: float, gpus: int, *, alpha_us: float = ROUND_ALPHA_US,
                 link_gbs: float) -> float:
    """Microseconds of one all-reduce of ``message_bytes`` over ``gpus`` GPUs, each with ``link_gbs``
    GB/s in one direction, every round of the algorithm paying ``alpha_us``:

        one_shot   alpha + (n-1) S/B              every GPU reads the n-1 other copies and sums
        two_shot   2 alpha + 2 (n-1)/n S/B        reduce-scatter then all-gather, all pairs at once
        ring       2 (n-1) alpha + 2 (n-1)/n S/B  the same bytes in 2 (n-1) neighbour rounds
        tree       2 ceil(log2 n) alpha + 2 S/B   reduce up a binary tree, broadcast down (pipelined)
        nvls       2 alpha + S/B                  the switch sums (NVLink SHARP): send once, read once
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 2:
        raise ValueError(f"gpus must be a whole number >= 2, got {gpus!r}")
    if not (message_bytes >= 0 and alpha_us >= 0 and link_gbs > 0):
        raise ValueError("message_bytes and alpha_us must be >= 0 and link_gbs > 0, got "
                         f"{message_bytes!r}, {alpha_us!r}, {link_gbs!r}")
    n, once = gpus, message_bytes / (link_gbs * 1e3)
    return {"one_shot": alpha_us + (n - 1) * once,
            "two_shot": 2 * alpha_us + 2 * (n - 1) / n * once,
            "ring": 2 * (n - 1) * alpha_us + 2 * (n - 1) / n * once,
            "tree": 2 * math.ceil(math.log2(n)) * alpha_us + 2 * once,
            "nvls": 2 * alpha_us + once}[algorithm]


def topology(gpu: str) -> str:
    """What a GPU's node offers an all-reduce: "nvls" (NVSwitch that reduces in the switch),
    "pcie" (no GPU-to-GPU fabric worth the name: under 100 GB/s) or "switch" (NVSwitch or a full
    mesh such as AMD's Infinity Fabric)."""
    g = presets.gpu(gpu)
    if g.nvls:
        return "nvls"
    return "pcie" if g.interconnect < 100e9 else "switch"


def link_gbs(gpu: str) -> float:
    """GB/s one GPU can send in one direction (half the datasheet's both-ways figure)."""
    return presets.gpu(gpu).interconnect / 2 / 1e9


def best_algorithm(message_bytes: float, gpus: int, gpu: str, alpha_us: float = ROUND_ALPHA_US):
    """(algorithm, microseconds) of the fastest algorithm this GPU's topology offers."""
    times = {a: allreduce_us(a, message_bytes, gpus, alpha_us=alpha_us, link_gbs=link_gbs(gpu))
             for a in TOPOLOGY_ALGORITHMS[topology(gpu)]}
    best = min(times, key=lambda a: (times[a], ALGORITHMS.index(a)))
    return best, times[best]


def measured_allreduce(gpu: str, tp: int) -> tuple[float, float]:
    """(alpha in s, beta in bytes/s): one all-reduce at this TP size summed up as a line, fitted to
    the measured table over 16 KiB-64 MiB (``sim.presets.kernels``; AMD: RCCL's published pair, the
    only all-reduce its presets have). A TP size without a measurement takes the nearest one's."""
    g = presets.gpu(gpu)
    t = efficiency.terms(presets.gpu_key(gpu), g.bf16_flops, g.bandwidth, "bf16", "bf16", tp, 1e8)
    return t.allreduce_alpha_s, t.allreduce_beta


def measured_allreduce_us(gpu: str, tp: int, message_bytes: float) -> float:
    """The line: alpha + bytes / beta, in microseconds."""
    alpha, beta = measured_allreduce(gpu, tp)
    return (alpha + message_bytes / beta) * 1e6


def kernel_table_allreduce_us(gpu: str, tp: int) -> dict:
    """TensorRT-LLM's custom all-reduce as measured (message bytes -> microseconds): the table the
    calibrated presets read at each step's own message size (``Setup.comm_curve``; aiconfigurator-
    core 0.12.0, NVIDIA GPUs only)."""
    key = presets.gpu_key(gpu)
    measured = efficiency.table(key).get("allreduce_us", {}).get(tp)     # this very tp, no nearest one
    if measured is None:
        raise ValueError(f"no measured all-reduce table for {key} at tp={tp}")
    return dict(measured)


def bus_bandwidth_gbs(algorithm_gbs: float, gpus: int) -> float:
    """nccl-tests' "bus bandwidth": the algorithm bandwidth x 2 (n-1)/n, comparable with a link's."""
    return algorithm_gbs * 2 * (gpus - 1) / gpus


def message_bytes(model: str, tokens: int) -> int:
    """One TP all-reduce's message: the step's tokens x the hidden size in BF16."""
    return tokens * presets.model(model).hidden * ACTIVATION_BYTES


@dataclass(frozen=True)
class CommRow:
    tp: int
    tokens: int
    comm_ms: float           # the step's all-reduces as the preset charges them (the measured table)
    line_ms: float           # the same all-reduces on the line alpha + bytes / beta
    step_ms: float           # the whole step

    @property
    def share(self) -> float:
        return self.comm_ms / self.step_ms


def comm_row(model: str, gpu: str, tp: int, tokens: int, weight_dtype: str = "fp8",
             kv_dtype: str | None = "fp8", context: int | None = None) -> CommRow:
    """The TP all-reduces of one step of ``tokens`` tokens: decode (``context`` per sequence,
    default CONTEXT) when ``tokens`` <= 1024, else one prefill chunk from the start of a prompt."""
    m = presets.model(model)
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    line = 2 * m.layers * measured_allreduce_us(gpu, tp, message_bytes(model, tokens)) / 1e3 if tp > 1 else 0.0
    if s.comm_curve is not None:
        comm = s.comm_seconds(tokens) * 1e3
    else:                            # no table (AMD): the line, its latency inside step_overhead
        comm = line
    if tokens <= 1024:
        step = s.step_time(tokens, tokens * (CONTEXT if context is None else context), 0, tokens)
    else:
        step = s.step_time(tokens, 0, attention_pairs(0, tokens))
    return CommRow(tp, tokens, comm, line, step * 1e3)


def prefill_gpu_ms_per_token(model: str, gpu: str, tp: int, weight_dtype: str = "fp8", chunk: int = 8192) -> float:
    """GPU-milliseconds one prompt token costs in an 8192-token prefill chunk (step x tp / chunk):
    what prefill capacity per GPU comes down to."""
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=weight_dtype)
    step = s.step_time(chunk, 0, attention_pairs(0, chunk))
    return step * tp / chunk * 1e3


# --- tensor parallelism: latency against throughput per GPU ------------------------------------

@dataclass(frozen=True)
class TPRow:
    model: str
    gpu: str
    tp: int
    weight_dtype: str
    kv_dtype: str
    tpot_slo: float
    tpot_b1_ms: float | None          # one request decoding alone (CONTEXT tokens of context)
    rate: float | None                # req/s one instance serves within the SLOs
    gpus: int | None                  # for 200 QPS with 30% headroom
    usd_per_million: float | None
    bound: str | None
    reason: str = ""

    @property
    def feasible(self) -> bool:
        return self.rate is not None

    @property
    def tokens_per_gpu_s(self) -> float | None:
        """Output tokens per second per GPU at the largest rate within the SLOs."""
        return None if self.rate is None else self.rate * SERVICE["output_len"] / self.tp


@lru_cache(maxsize=4096)
@memo.shipped("ch09.tp_row", "course/ch09.py", "course/ch05.py")
def tp_row(model: str, gpu: str, tp: int, weight_dtype: str = "fp8", kv_dtype: str | None = None,
           tpot_slo: float = SERVICE["tpot_slo"]) -> TPRow:
    """One TP size's latency and its ``sim.plan`` for chapter 02's service at ``tpot_slo``
    (infeasible options keep their reason)."""
    gpu = presets.gpu_key(gpu)
    kv = kv_dtype or (weight_dtype if weight_dtype != "int4" else "fp8")
    try:
        s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv)
    except ValueError as e:
        return TPRow(model, gpu, tp, weight_dtype, kv, tpot_slo, None, None, None, None, None, _first(e))
    tpot = decode_step_s(s, 1, CONTEXT) * 1e3
    usd = price(gpu)
    try:
        p = plan(SERVICE["qps"], s, SERVICE["input_len"], SERVICE["output_len"], SERVICE["ttft_slo"], tpot_slo,
                 gpus_per_instance=tp, gpu_hour_usd=2.5 if usd is None else usd)
    except ValueError as e:
        return TPRow(model, gpu, tp, weight_dtype, kv, tpot_slo, tpot, None, None, None, None, _first(e))
    return TPRow(model, gpu, tp, weight_dtype, kv, tpot_slo, tpot, p.rate_per_instance, p.gpus,
                 None if usd is None else p.usd_per_million_output_tokens, p.bound)


def _first(e: Exception) -> str:
    return str(e).split(";")[0].split(": its")[0]


def tp_cells(r: TPRow) -> list:
    tpot = "-" if r.tpot_b1_ms is None else f"{r.tpot_b1_ms:.1f}"
    if not r.feasible:
        return [f"TP{r.tp}", f"{r.tpot_slo * 1e3:.0f} ms", tpot, "-", "-", "-", "-", r.reason[:58]]
    usd = "-" if r.usd_per_million is None else f"${r.usd_per_million:.2f}"
    return [f"TP{r.tp}", f"{r.tpot_slo * 1e3:.0f} ms", tpot, f"{r.rate:.2f}", f"{r.tokens_per_gpu_s:.0f}",
            r.gpus, usd, r.bound]


TP_HEAD = ["TP", "TPOT SLO", "TPOT b=1 (ms)", "req/s/inst", "tok/s/GPU", "GPUs", "$/1M out", "bound"]


def cheapest_tp(rows) -> TPRow | None:
    ok = [r for r in rows if r.feasible and r.usd_per_million is not None]
    return min(ok, key=lambda r: (r.usd_per_million, r.gpus, r.tp)) if ok else None


def decode_frontier(model: str, gpu: str, tp: int, weight_dtype: str = "fp8", kv_dtype: str | None = "fp8",
                    batches=BATCHES, context: int = CONTEXT):
    """Decode alone at each batch the KV holds: (batch, step ms = TPOT, output tokens/s per GPU).
    The latency-throughput curve of one TP size, without prefill's interference (the plan has it)."""
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    fits = s.kv_capacity_tokens // (SERVICE["input_len"] + SERVICE["output_len"])
    out = []
    for b in batches:
        if b > min(fits, s.max_num_seqs):
            break
        step = decode_step_s(s, b, context)
        out.append((b, step * 1e3, b / step / tp))
    return out


def decode_ceiling(model: str, gpu: str, tp: int, tpot_ms: float, weight_dtype: str = "fp8",
                   kv_dtype: str | None = "fp8") -> tuple[int, float] | None:
    """(largest decode batch whose step is within ``tpot_ms``, its output tokens/s per GPU): what
    decode alone allows at a TPOT limit, searched batch by batch up to the KV's and the scheduler's
    limits. None when a lone request already misses it."""
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    top = min(s.kv_capacity_tokens // (SERVICE["input_len"] + SERVICE["output_len"]), s.max_num_seqs)
    best = None
    for b in range(1, top + 1):
        step = decode_step_s(s, b, CONTEXT)
        if step * 1e3 > tpot_ms:
            break
        best = (b, b / step / tp)
    return best


def frontier_figure(model: str = MODEL, gpu: str = "h100-sxm", weight_dtype: str = "fp8",
                    tps=(2, 4, 8), slos_ms=(50, 30, 20)):
    """TPOT (x) against output tokens/s per GPU (y) for decode batches 1..1024, one line per TP
    size, with the TPOT limits as vertical lines: the trade a TP size makes."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7.5, 3.8))
    ax = fig.subplots()
    fig.subplots_adjust(left=0.11, right=0.97, bottom=0.14, top=0.9)
    for tp in tps:
        pts = decode_frontier(model, gpu, tp, weight_dtype, weight_dtype)
        ax.plot([p[1] for p in pts], [p[2] for p in pts], "o-", ms=3, label=f"TP{tp}")
        for b, x, y in pts:
            if b in (1, 64, 256):
                ax.annotate(f"b={b}", (x, y), fontsize=7, xytext=(3, -9), textcoords="offset points")
    for slo in slos_ms:
        ax.axvline(slo, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("TPOT = decode step (ms)")
    ax.set_ylabel("output tokens/s per GPU (decode only)")
    ax.set_xlim(0, 60)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(f"{presets.model(model).name} {weight_dtype.upper()} on {presets.gpu(gpu).name}")
    return fig


# Published TP scaling: TensorRT-LLM 0.13 perf overview, Llama-3.1-70B FP8 on H100 SXM, offline
# (trtllm-bench, 128 in / 128 out), output tokens/s of the whole TP group
# (https://github.com/NVIDIA/TensorRT-LLM/blob/v0.13.0/docs/source/performance/perf-overview.md;
# the same rows are in tests/validation/rows_vendor.csv).
TRTLLM_70B_FP8_128 = {1: 2168.72, 2: 5215.12, 4: 8677.59, 8: 15711.6}


def offline_tokens_s(model: str, gpu: str, tp: int, weight_dtype: str, input_len: int, output_len: int,
                     num_requests: int = 3000, max_num_seqs: int = 2048, mem_util: float = 0.95) -> float:
    """Output tokens/s of one instance given every request at once (the simulator's offline run).
    ``mem_util`` 0.95 as TensorRT-LLM's kv_cache_free_gpu_mem_fraction; a big batch limit as its
    benchmark's."""
    from sim import run, workload
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=weight_dtype, mem_util=mem_util,
                         max_num_seqs=max_num_seqs)
    r = run(s, workload.offline(num_requests, input_len, output_len))
    return float(r.output_len.sum() / r.finish.max())


# --- pipeline parallelism (arithmetic: the simulator has no stages) ----------------------------

def bubble_fraction(stages: int, microbatches: int) -> float:
    """Idle share of a forward-only pipeline of ``stages`` stages fed ``microbatches`` equal
    microbatches: (p - 1) / (m + p - 1)."""
    for name, v in (("stages", stages), ("microbatches", microbatches)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    return (stages - 1) / (microbatches + stages - 1)


def p2p_ms(model: str, tokens: int, link_gbs_: float, latency_us: float = 5.0) -> float:
    """One hand-off between pipeline stages: the tokens' hidden states in BF16 over a link."""
    return latency_us / 1e3 + message_bytes(model, tokens) / (link_gbs_ * 1e9) * 1e3


@dataclass(frozen=True)
class PPRow:
    tp: int
    pp: int
    group_batch: int        # sequences in each of the pp groups that take turns through the stages
    tpot_ms: float
    tokens_per_gpu_s: float
    kv_tokens: int


def pp_decode(model: str, gpu: str, tp: int, pp: int, group_batch: int, weight_dtype: str = "fp8",
              link: float | None = None) -> PPRow:
    """Decode on ``pp`` stages of ``tp`` GPUs each, ``pp`` groups of ``group_batch`` sequences in
    turn (the fewest that keep every stage busy). Arithmetic on the TP-``tp`` preset: a stage does
    1/pp of the layers, so its step is the whole TP-``tp`` step / pp (host time spread evenly: an
    optimistic assumption), and a token crosses every stage plus pp - 1 hand-offs:

        TPOT = step_tp(b) + (pp - 1) x hand-off,     tokens/s = pp x b / TPOT

    The KV cache spans all tp x pp GPUs' memory (each stage keeps its own layers' KV)."""
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=weight_dtype)
    hop = p2p_ms(model, group_batch, link_gbs(gpu) if link is None else link) if pp > 1 else 0.0
    tpot = decode_step_s(s, group_batch, CONTEXT) * 1e3 + (pp - 1) * hop
    per_gpu_bytes = (s.kv_capacity_tokens * s.kv_bytes_per_token + s.weight_bytes) / tp
    kv = int((tp * pp * per_gpu_bytes - s.weight_bytes) / s.kv_bytes_per_token)
    return PPRow(tp, pp, group_batch, tpot, pp * group_batch / tpot * 1e3 / (tp * pp), kv)


@dataclass(frozen=True)
class PPLayout:
    tp: int
    pp: int
    tpot_ms: float               # ``sequences`` decoding, in pp groups
    decode_per_gpu: float        # output tokens/s per GPU at that
    prefill_gpu_ms: float        # GPU-ms per prompt token, pipeline full
    lone_prompt_ms: float        # one 8192-token prompt alone, in 8 chunks of 1024
    kv_tokens: int


def pp_layout(model: str, gpu: str, tp: int, pp: int, sequences: int = 64, weight_dtype: str = "fp8",
              prompt: int = 8192, chunks: int = 8) -> PPLayout:
    """One node's GPUs as ``pp`` stages of ``tp`` (arithmetic, see ``pp_decode``). Prefill: a stage
    computes 1/pp of the layers, so with the pipeline full a prompt token costs what it costs on
    the TP-``tp`` instance (no all-reduce between stages); a lone prompt in ``chunks`` chunks waits
    for the pipeline to fill: (m + p - 1) / (m p) of the TP-``tp`` time for the whole prompt."""
    d = pp_decode(model, gpu, tp, pp, max(1, sequences // pp), weight_dtype)
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=weight_dtype)
    whole = s.step_time(prompt, 0, attention_pairs(0, prompt)) * 1e3
    return PPLayout(tp, pp, d.tpot_ms, d.tokens_per_gpu_s, whole * tp / prompt,
                    whole * (chunks + pp - 1) / (chunks * pp), d.kv_tokens)


def cross_node_step_ms(model: str, tokens: int, *, nodes: int = 2, gpus_per_node: int = 8,
                       nic_gbs: float = NIC_GBS, alpha_us: float = 10.0) -> dict:
    """Communication of one step of ``tokens`` tokens when a model spans ``nodes`` nodes, two ways:
    TP over all GPUs (2 all-reduces per layer, a ring whose slowest hop is the NIC: 2 (n-1)/n of
    the message over it, 2 (n-1) rounds of ``alpha_us``) or TP inside a node and PP between nodes
    (nodes - 1 hand-offs of the hidden states per step). Milliseconds."""
    m = presets.model(model)
    n, size = nodes * gpus_per_node, message_bytes(model, tokens)
    ring = 2 * (n - 1) * alpha_us + 2 * (n - 1) / n * size / (nic_gbs * 1e3)
    return {"tp_all_ms": 2 * m.layers * ring / 1e3,
            "pp_between_ms": (nodes - 1) * (alpha_us + size / (nic_gbs * 1e3)) / 1e3}


# --- expert parallelism (arithmetic: the simulator has no experts' routing) -------------------

def gpu_hit_prob(experts: int, topk: int, gpus: int) -> float:
    """Chance that a token's ``topk`` distinct experts (drawn uniformly) include one of a given
    GPU's experts/gpus: 1 - C(E - E/g, k) / C(E, k)."""
    if experts % gpus:
        raise ValueError(f"gpus ({gpus}) must divide experts ({experts})")
    per = experts // gpus
    return 1 - math.comb(experts - per, topk) / math.comb(experts, topk)


@dataclass(frozen=True)
class A2ARow:
    ep: int
    copies: float            # other GPUs one token is sent to per MoE layer
    dispatch_us: float       # per layer, at nic_gbs
    combine_us: float
    step_ms: float           # every MoE layer's dispatch + combine, nothing overlapped


def all_to_all(ep: int, tokens_per_gpu: int = 128, model: str = "deepseek-v3", nic_gbs: float = NIC_GBS,
               dispatch_bytes: float = 1.0, combine_bytes: float = 2.0, scale_block: int = 128) -> A2ARow:
    """Decode all-to-all of one GPU under expert parallelism over ``ep`` GPUs, every copy over the
    GPU's RDMA NIC (as DeepEP's low-latency kernels do): a token goes to each other GPU holding one
    of its experts (one copy per GPU), FP8 with one 4-byte scale per ``scale_block`` values on the
    way out, BF16 on the way back. Uniform routing, no redundant experts, no congestion."""
    m = presets.model(model)
    copies = (ep - 1) * gpu_hit_prob(m.experts, m.experts_per_token, ep)
    out = tokens_per_gpu * copies * m.hidden * (dispatch_bytes + 4 / scale_block)
    back = tokens_per_gpu * copies * m.hidden * combine_bytes
    d, c = out / (nic_gbs * 1e3), back / (nic_gbs * 1e3)
    return A2ARow(ep, copies, d, c, (m.layers - m.dense_layers) * (d + c) / 1e3)


# DeepEP's low-latency kernels on H800 + CX7 400 Gb/s, 128 tokens per GPU, hidden 7168, top-8,
# FP8 dispatch / BF16 combine: (dispatch us, combine us) per EP size
# (https://github.com/deepseek-ai/DeepEP, README "Low-latency kernels with pure RDMA"; docs/legacy.md).
DEEPEP_LOW_LATENCY_US = {32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}

# DeepSeek's own deployment of V3/R1 (open-infra-index, "Day 6: DeepSeek-V3/R1 inference system
# overview", 2025-03): routed experts over EP32 for prefill and EP144 for decode, 32 redundant
# experts on both; 9 and 2 routed experts per GPU; 73.7k input tok/s (cache hits included) per
# H800 node in prefill, 14.8k output tok/s per node in decode, 20-22 tok/s per user.
DEEPSEEK_DEPLOYMENT = {"prefill": dict(ep=32, redundant=32, experts_per_gpu=9),
                       "decode": dict(ep=144, redundant=32, experts_per_gpu=2)}


def experts_per_gpu(experts: int, redundant: int, ep: int) -> float:
    return (experts + redundant) / ep


def synthetic_loads(experts: int = 256, tokens: int = 65536, topk: int = 8, skew: float = 0.8,
                    seed: int = 0) -> np.ndarray:
    """Tokens per expert in one window: each expert's popularity lognormal(0, ``skew``), each token
    choosing ``topk`` experts by popularity (with replacement: a stand-in for a real router's
    statistics, which this course does not have)."""
    rng = np.random.default_rng(seed)
    popularity = rng.lognormal(0.0, skew, experts)
    return rng.multinomial(tokens * topk, popularity / popularity.sum())


def replicate(loads, redundant: int) -> list[int]:
    """Copies per expert: one each, then every redundant slot to the expert whose load per copy is
    the largest (EPLB's rule; ties to the lower id)."""
    count = [1] * len(loads)
    for _ in range(redundant):
        e = max(range(len(loads)), key=lambda i: (loads[i] / count[i], -i))
        count[e] += 1
    return count


def place(loads, gpus: int, redundant: int = 0) -> list[list[int]]:
    """Experts on GPUs. Without redundancy, the usual contiguous layout (GPU g holds experts
    g*E/G ... ); with it, EPLB's: replicate, then pack the copies, heaviest first, each onto the
    least-loaded GPU that still has a free slot, so every GPU holds the same number of copies."""
    n = len(loads)
    if (n + redundant) % gpus:
        raise ValueError(f"experts + redundant ({n + redundant}) must be a multiple of gpus ({gpus})")
    slots = (n + redundant) // gpus
    if redundant == 0:
        return [list(range(g * slots, (g + 1) * slots)) for g in range(gpus)]
    count = replicate(loads, redundant)
    copies = sorted(((loads[e] / count[e], e) for e in range(n) for _ in range(count[e])), key=lambda c: (-c[0], c[1]))
    held, load = [[] for _ in range(gpus)], [0.0] * gpus
    for w, e in copies:
        g = min((g for g in range(gpus) if len(held[g]) < slots), key=lambda g: (load[g], g))
        held[g].append(e)
        load[g] += w
    return held


def gpu_loads(loads, placement) -> np.ndarray:
    """Tokens each GPU's experts compute: an expert's tokens split evenly over its copies."""
    count = np.zeros(len(loads))
    for held in placement:
        for e in held:
            count[e] += 1
    return np.array([sum(loads[e] / count[e] for e in held) for held in placement])


def imbalance(loads, placement) -> float:
    """max / mean of the GPUs' loads: the MoE layer waits for the busiest GPU, so its efficiency
    is the inverse."""
    g = gpu_loads(loads, placement)
    return float(g.max() / g.mean()) if g.mean() > 0 else 1.0


def single_copy_gpu_share(placement, experts: int) -> float:
    """Share of GPUs whose loss takes an expert with it (they hold an expert's only copy)."""
    count = np.zeros(experts, int)
    for held in placement:
        for e in held:
            count[e] += 1
    return sum(any(count[e] == 1 for e in held) for held in placement) / len(placement)


# --- context parallelism (arithmetic) ----------------------------------------------------------

def ring_overlap_tokens(model: str, gpu: str, link: float | None = None, attn_mfu: float = 0.5) -> float:
    """Tokens per GPU above which ring attention hides its KV transfers: in each of the ring's
    steps a GPU computes its N/c queries against one block of N/c keys (4 x heads x head_dim
    FLOPs per pair and layer) while passing a block of N/c tokens' K and V (2 x kv_heads x
    head_dim x 2 bytes per token and layer) on; compute >= transfer when
    N/c >= 2 kv_heads x 2 bytes x peak x attn_mfu / (4 x heads x link)."""
    m, g = presets.model(model), presets.gpu(gpu)
    bw = (link_gbs(gpu) if link is None else link) * 1e9
    return 2 * m.kv_heads * 2 * g.bf16_flops * attn_mfu / (4 * m.heads * bw)


def long_prefill_s(model: str, gpu: str, tp: int, tokens: int, weight_dtype: str = "fp8",
                   chunk: int = 8192) -> float:
    """Seconds one instance takes to prefill a ``tokens``-token prompt alone, chunk by chunk (each
    chunk attends to everything before it: attention grows with the square of the length)."""
    s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=weight_dtype)
    return sum(s.step_time(min(chunk, tokens - done), done, attention_pairs(done, min(chunk, tokens - done)))
               for done in range(0, tokens, chunk))


def attention(q, k, v):
    """Softmax attention of queries q (n, d) over keys k (m, d) and values v (m, d): (output, LSE)."""
    s = q @ k.T / math.sqrt(q.shape[1])
    top = s.max(axis=1, keepdims=True)
    w = np.exp(s - top)
    total = w.sum(axis=1, keepdims=True)
    return (w @ v) / total, (top + np.log(total))[:, 0]


def lse_merge(outputs, lses):
    """Merge attention computed over disjoint blocks of keys: each block's output weighted by
    exp(its LSE - the LSE of all blocks), which is what one softmax over every key gives."""
    lses = np.stack(lses)
    total = np.logaddexp.reduce(lses, axis=0)
    return sum(o * np.exp(l - total)[:, None] for o, l in zip(outputs, lses)), total


def lse_demo(queries: int = 16, keys: int = 4096, dim: int = 128, blocks: int = 4, seed: int = 0) -> float:
    """Largest |difference| between attention over all keys and the LSE merge of ``blocks`` parts."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, dim)) for n in (queries, keys, keys))
    full, _ = attention(q, k, v)
    parts = [attention(q, kb, vb) for kb, vb in zip(np.array_split(k, blocks), np.array_split(v, blocks))]
    merged, _ = lse_merge([p[0] for p in parts], [p[1] for p in parts])
    return float(np.abs(merged - full).max())


# --- the panel ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    row: TPRow                       # the TP-size instance (the stage group when pp > 1)
    pp: int
    tpot_b1_ms: float | None         # with pp - 1 hand-offs when pp > 1
    tokens_per_gpu_s: float | None   # pp > 1: the TP-size instance's (arithmetic, see pp_note)
    comm_b1_ms: float | None         # the step's all-reduces at batch 1
    algorithm: str | None            # the fastest algorithm for a batch-64 decode message
    frontiers: dict                  # tp -> decode_frontier points (the feasible TP sizes)


PP_NOTE = ("模拟器没有流水线：PP>1 的数字是算术估计——TPOT = TP 组的一步 + (PP−1) 次交接，"
           "每卡吞吐取 TP 组实例的（流水线填满时，PP 个组轮流走各段，相当于 PP 个 TP 组实例，但共享显存）")


def answer(model: str, gpu: str, tp: int, pp: int = 1, weight_dtype: str = "fp8") -> Answer:
    row = tp_row(model, gpu, int(tp), weight_dtype)
    return Answer(row, int(pp), *_extras(model, presets.gpu_key(gpu), int(tp), int(pp), weight_dtype))


@lru_cache(maxsize=1024)
def _extras(model, gpu, tp, pp, weight_dtype):
    row = tp_row(model, gpu, tp, weight_dtype)
    tpot = row.tpot_b1_ms
    if tpot is not None and pp > 1:
        tpot += (pp - 1) * p2p_ms(model, 1, link_gbs(gpu))
    comm = None
    if row.tpot_b1_ms is not None:
        comm = comm_row(model, gpu, tp, 1, weight_dtype, row.kv_dtype).comm_ms
    algo = best_algorithm(message_bytes(model, 64), tp, gpu)[0] if tp > 1 else None
    frontiers = {}
    for t in TPS:
        try:
            frontiers[t] = tuple(decode_frontier(model, gpu, t, weight_dtype, row.kv_dtype))
        except ValueError:
            continue
    return tpot, row.tokens_per_gpu_s, comm, algo, frontiers


def answer_html(a: Answer) -> str:
    r = a.row
    lines = [("实例", presets.describe(r.model, r.gpu, r.tp, r.weight_dtype, r.kv_dtype)
              + (f"，× PP={a.pp}（共 {r.tp * a.pp} 张卡）" if a.pp > 1 else ""))]
    if a.tpot_b1_ms is None:
        lines.append(("不可行", r.reason))
        if a.pp > 1:
            lines.append(("注意", "PP 的估计建立在 TP 组的实例上，而模拟器按整个模型检查一个 TP 组的显存："
                                   "模型放不进一个 TP 组时，这里给不出数字（真实的 PP 每段只放 1/PP 的层）"))
    else:
        lines.append(("TPOT（batch 1）", f"{a.tpot_b1_ms:.1f} ms" + ("（算术估计）" if a.pp > 1 else "")))
        if a.comm_b1_ms is not None and r.tp > 1:
            lines.append(("其中 all-reduce", f"{a.comm_b1_ms:.2f} ms（每层 2 次，实测延迟与带宽）"))
        if a.algorithm:
            lines.append(("batch 64 的 all-reduce 选", f"{a.algorithm}（拓扑：{topology(r.gpu)}）"))
        if r.feasible:
            lines += [(f"SLO 内每卡吞吐（TPOT < {r.tpot_slo * 1e3:.0f} ms）", f"{a.tokens_per_gpu_s:.0f} token/s"),
                      ("单实例速率", f"{r.rate:.2f} req/s"),
                      ("200 QPS 需要", f"{pp_gpus(r, a.pp)} 张卡（含 30% 余量）")]
            if r.usd_per_million is not None:
                lines.append(("每百万输出 token", f"${r.usd_per_million:.2f}"))
            lines.append(("瓶颈", r.bound))
        else:
            lines.append(("SLO 内不可行", r.reason))
        if a.pp > 1:
            lines.append(("注意", PP_NOTE))
    return rows_html(lines, "max-width:480px")


def pp_gpus(row: TPRow, pp: int) -> int:
    """GPUs for the service when each instance is ``pp`` stages of the row's TP group: such an
    instance serves about pp times the TP group's rate (see PP_NOTE), so the TP plan's instances,
    grouped pp at a time (rounded up), times tp x pp GPUs."""
    return math.ceil(row.gpus / row.tp / pp) * row.tp * pp


COLORS = {1: "#9467bd", 2: "#1f77b4", 4: "#2ca02c", 8: "#d62728"}


def frontier_chart(a: Answer) -> plots.Chart:
    chart = plots.Chart(1, width=500, height=260, title="decode：TPOT 对每卡吞吐（每点一个 batch）")
    for t, pts in a.frontiers.items():
        if pts:
            chart.add(0, f"TP{t}", [p[1] for p in pts], [p[2] for p in pts], color=COLORS[t],
                      dash="" if t == a.row.tp else "4 3")
    chart.vline(0, "TPOT SLO", a.row.tpot_slo * 1e3, color="#999999")
    chart.axes(0, xlabel="TPOT (ms)", ylabel="token/s/GPU")
    return chart


class ParallelPanel(DropdownPanel):
    """Model x GPU x TP x PP x weight format -> TPOT at batch 1, tokens/s per GPU within the SLOs,
    GPUs and cost, and every TP size's decode curve. Each move is cached plans and arithmetic."""

    width, per_row, has_chart = "200px", 3, True

    def controls_spec(self) -> dict:
        return {
            "model": ("模型", PANEL_MODELS, MODEL),
            "gpu": ("GPU", PANEL_GPUS, "h100-sxm"),
            "tp": ("TP", TPS, 8),
            "pp": ("PP", (1, 2, 4), 1),
            "weight_dtype": ("权重", ("fp8", "bf16"), "fp8"),
        }

    def update(self) -> Answer:
        self.answer = answer(**self.choice())
        self.table.value = answer_html(self.answer)
        self.figure = frontier_chart(self.answer)
        self.chart.value = self.figure.svg()
        return self.answer


def parallel_panel() -> ParallelPanel:
    return ParallelPanel()
