"""Chapter 03 (design answers I): one small hand estimate per function, the chapter's simulations,
and its panel (the cache-aware gateway).

Every estimate returns an ordered ``dict`` of named figures (units in the names: ``_s``, ``_gb``,
``_tokens``...) so the notebook prints it with ``table`` and the tests check it without a kernel.
The simulations are scaled down from the questions' sizes so each runs in a few seconds on two
cores; each docstring says how. Hardware figures are datasheet numbers (``sim.presets``) unless an
argument says otherwise; prices are assumptions, stated where they are used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from course.live import Live
from course.panel import KV_BYTES_PER_TOKEN
from sim import lengths, presets, workload
from sim.fleet import Failures, Fleet, run_fleet, summarize_fleet
from sim.kv import Paged, PrefixCache
from sim.metrics import summarize
from sim.workload import Workload, run
from course import memo
from course.kit import rows_html

GB = 1e9


def table(rows: dict, digits: int = 3) -> str:
    """A two-column text table of an estimate's figures (numbers to ``digits`` significant digits,
    thousands separated); the notebook prints it."""
    width = max(len(k) for k in rows)
    lines = []
    for k, v in rows.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            text = str(v)
        elif isinstance(v, int) or (float(v).is_integer() and abs(v) >= 1000):
            text = f"{int(v):,}"
        elif abs(v) >= 100:
            text = f"{v:,.0f}"
        else:
            text = f"{v:.{digits}g}"
        lines.append(f"{k:<{width}}  {text}")
    return "\n".join(lines)


def _up(x: float, step: int) -> int:
    """x rounded up to a multiple of step."""
    return int(math.ceil(x / step - 1e-9) * step)


# ---------------------------------------------------------------------------------------------
# Q1: a 671B MoE online service (DeepSeek-V3 on H200, FP8), PD disaggregation and expert parallelism
# ---------------------------------------------------------------------------------------------

H200_USD_PER_HOUR = 3.0          # an assumption, like chapter 02's $2.5 for an H100
NIC_GBS = 50.0                   # one 400 Gb/s NIC per GPU (InfiniBand NDR / RoCE)
GPUS_PER_NODE = 8


def moe_demand(qps: float = 500, input_len: int = 3000, output_len: int = 800, prefix_hit: float = 0.5,
               model: str = "deepseek-v3") -> dict:
    """Tokens per second the service must compute: prefill only for the uncached part of each
    prompt, decode for every output token; and the matmul FLOP/s each needs (2 x active params)."""
    m = presets.model(model)
    prefill = qps * input_len * (1 - prefix_hit)
    decode = qps * output_len
    return {
        "active_params_b": m.active_params / 1e9,
        "total_params_b": m.total_params / 1e9,
        "prefill_tokens_per_s": prefill,
        "decode_tokens_per_s": decode,
        "prefill_pflops": prefill * 2 * m.active_params / 1e15,
        "decode_pflops": decode * 2 * m.active_params / 1e15,
    }


def moe_parts(model: str = "deepseek-v3", weight_bytes_per_param: float = 1.0) -> dict:
    """Where a MoE model's bytes are: routed experts (split by expert parallelism) versus everything
    else (attention, shared expert, dense layers, embeddings: replicated on every GPU under DP
    attention), and the MLA latent KV per token with no TP replication."""
    m = presets.model(model)
    moe_layers = m.layers - m.dense_layers
    routed = moe_layers * m.experts * 3 * m.hidden * m.moe_intermediate
    latent = m.layers * (m.kv_lora_rank + m.rope_dim) if m.kv_lora_rank else 2 * m.layers * m.kv_heads * m.head_dim
    return {
        "moe_layers": moe_layers,
        "routed_expert_gb": routed * weight_bytes_per_param / GB,
        "replicated_gb": (m.total_params - routed) * weight_bytes_per_param / GB,
        "kv_bytes_per_token": latent * weight_bytes_per_param,
    }


def a2a_bytes_per_token(ep: int, model: str = "deepseek-v3", node_limit: int = 4,
                        dispatch_bytes: int = 1, combine_bytes: int = 2) -> float:
    """Inter-node all-to-all bytes per token per forward: each MoE layer sends the token's hidden
    state (FP8) to at most ``node_limit`` nodes and gets it back (BF16); a destination on the
    sender's own node (a share 8 / ep of them) goes over NVLink instead of the network."""
    m = presets.model(model)
    nodes = min(m.experts_per_token, node_limit)
    remote = max(0.0, 1 - GPUS_PER_NODE / ep)
    return (m.layers - m.dense_layers) * nodes * m.hidden * (dispatch_bytes + combine_bytes) * remote


# DeepEP's low-latency kernels on H800 + CX7 400 Gb/s (128 tokens per rank, top-8, FP8 dispatch, BF16
# combine) measure 39-46 GB/s of RDMA at EP64 and above:
# https://github.com/deepseek-ai/DeepEP/blob/main/docs/legacy.md#low-latency-kernels-with-pure-rdma
LL_GBS = 40.0
# The same table's per-layer latencies (dispatch us, combine us) at 128 tokens per rank, by EP size.
DEEPEP_LL_US = {8: (77, 114), 16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}
# FlashMLA (MLA decode, BF16, compute-bound case): 580, later 660 TFLOP/s of the H800's ~989:
# https://github.com/deepseek-ai/FlashMLA
ATTN_UTIL = 0.6


def a2a_low_latency_bytes_per_token(model: str = "deepseek-v3", dispatch_bytes: int = 1, combine_bytes: int = 2) -> float:
    """Decode all-to-all bytes per token per forward in low-latency mode (DeepEP's pure-RDMA kernels):
    no node de-duplication, each MoE layer sends the token's hidden state (FP8) to every one of its
    selected experts and gets each result back (BF16): layers x top-k x hidden x 3 bytes."""
    m = presets.model(model)
    return (m.layers - m.dense_layers) * m.experts_per_token * m.hidden * (dispatch_bytes + combine_bytes)


def mla_absorbed_flops_per_pair(model: str = "deepseek-v3") -> float:
    """Decode attention FLOPs per (query, key) pair in MLA's absorbed form (the up-projections folded
    into the query and the output): every head scores the 576-wide cached latent (512 + 64 RoPE)
    and sums the 512-wide latent: 2 x layers x heads x (576 + 512). Prefill uses the cheaper
    expanded form (``Model.attention_flops_per_pair``), decode this one because it reads only the
    latent."""
    m = presets.model(model)
    return 2.0 * m.layers * m.heads * ((m.kv_lora_rank + m.rope_dim) + m.kv_lora_rank)


def moe_prefill_gpus(qps: float = 500, input_len: int = 3000, prefix_hit: float = 0.5, ep: int = 32,
                     mfu: float = 0.4, gpu: str = "h200", model: str = "deepseek-v3",
                     nic_gbs: float = NIC_GBS) -> dict:
    """Prefill pool with expert parallelism ``ep`` per instance: per GPU, a token costs its matmul
    FLOPs (2 x active params, plus attention over the prompt so far) or its all-to-all bytes over
    the NIC, whichever is slower (two micro-batches overlap them). GPUs = uncached tokens/s over a
    GPU's rate, rounded up to whole instances of ``ep`` GPUs. Under DP attention one request's
    attention and dense layers run on one rank (its experts' work is spread, but so is every
    other rank's), so one request's prefill takes its uncached tokens at one GPU's rate."""
    m, g = presets.model(model), presets.gpu(gpu)
    flops = g.flops("fp8") * mfu
    cached = int(input_len * prefix_hit)
    pairs = (cached + input_len) / 2                      # mean context an uncached token attends to
    t_compute = (2 * m.active_params + m.attention_flops_per_pair() * pairs) / flops
    t_comm = a2a_bytes_per_token(ep, model) / (nic_gbs * GB)
    per_gpu = 1 / max(t_compute, t_comm)
    tokens = qps * input_len * (1 - prefix_hit)
    gpus = _up(tokens / per_gpu, ep)
    uncached = input_len - cached
    return {
        "ep": ep,
        "compute_us_per_token": t_compute * 1e6,
        "a2a_us_per_token": t_comm * 1e6,
        "tokens_per_s_per_gpu": per_gpu,
        "gpus_exact": tokens / per_gpu,
        "instances": gpus // ep,
        "gpus": gpus,
        "prefill_ms_one_request": uncached / per_gpu * 1e3,
    }


def moe_decode_step(gpus: int, qps: float = 500, input_len: int = 3000, output_len: int = 800,
                    tpot_s: float = 0.05, mfu: float = 0.4, gpu: str = "h200", model: str = "deepseek-v3",
                    ll_gbs: float = LL_GBS, attn_util: float = ATTN_UTIL, overhead_s: float = 1.5e-3) -> dict:
    """One decode step of a pool of ``gpus`` GPUs with DP attention + EP over all of them. The
    sequences in flight come from Little's law at the TPOT target (qps x output_len x tpot_s,
    conservative); per GPU, the step reads its weights (replicated part + 1/gpus of the experts)
    and its sequences' KV; computes its batch's matmuls (FP8 at ``mfu``) and MLA attention in the
    absorbed form (BF16 at ``attn_util``, FlashMLA's share of peak); and sends the low-latency
    all-to-all to every selected expert at ``ll_gbs`` (DeepEP's measured RDMA rate). The slowest
    of the three sets the step (two micro-batches overlap them), plus a fixed overhead."""
    m, g = presets.model(model), presets.gpu(gpu)
    parts = moe_parts(model)
    seqs = qps * output_len * tpot_s
    batch = seqs / gpus
    context = input_len + output_len / 2
    weights = (parts["replicated_gb"] + parts["routed_expert_gb"] / gpus) * GB
    kv = batch * context * parts["kv_bytes_per_token"]
    t_mem = (weights + kv) / g.bandwidth
    t_linear = batch * 2 * m.active_params / (g.flops("fp8") * mfu)
    t_attn = batch * mla_absorbed_flops_per_pair(model) * context / (g.flops("bf16") * attn_util)
    t_comm = batch * a2a_low_latency_bytes_per_token(model) / (ll_gbs * GB)
    step = max(t_mem, t_linear + t_attn, t_comm) + overhead_s
    memory = (weights + kv) / (g.memory * 0.9)
    slots = math.ceil(m.experts / gpus)                   # expert slots per GPU; the spare ones hold replicas (EPLB)
    return {"gpus": gpus, "sequences": seqs, "batch_per_gpu": batch,
            "a2a_mb_per_token": a2a_low_latency_bytes_per_token(model) / 1e6,
            "absorbed_mflop_per_pair": mla_absorbed_flops_per_pair(model) / 1e6,
            "expanded_mflop_per_pair": m.attention_flops_per_pair() / 1e6,
            "expert_slots_per_gpu": slots, "redundant_slots": slots * gpus - m.experts, "memory_ms": t_mem * 1e3,
            "linear_ms": t_linear * 1e3, "attention_ms": t_attn * 1e3, "compute_ms": (t_linear + t_attn) * 1e3,
            "a2a_ms": t_comm * 1e3, "step_ms": step * 1e3, "tokens_per_s_per_gpu": batch / step,
            "memory_used": memory, "ok": step <= tpot_s and memory <= 1}


def a2a_ms_from_deepep(batch_per_gpu: float, ep: int, model: str = "deepseek-v3") -> dict:
    """A cross-check of the decode all-to-all from DeepEP's measured latencies instead of a
    bandwidth: the measured EP size nearest at or above ``ep`` (256 beyond), its dispatch + combine
    per MoE layer at 128 tokens per rank, scaled by ``batch_per_gpu`` / 128 (the kernels are
    bandwidth-bound at these sizes), over the model's MoE layers."""
    m = presets.model(model)
    measured = min((e for e in DEEPEP_LL_US if e >= ep), default=max(DEEPEP_LL_US))
    dispatch, combine = DEEPEP_LL_US[measured]
    per_128 = (m.layers - m.dense_layers) * (dispatch + combine) / 1e3
    return {"measured_ep": measured, "dispatch_us_per_layer": dispatch, "combine_us_per_layer": combine,
            "ms_at_128_tokens": per_128, "ms_at_batch": per_128 * batch_per_gpu / 128}


def moe_decode_gpus(qps: float = 500, input_len: int = 3000, output_len: int = 800, tpot_s: float = 0.05,
                    **kw) -> dict:
    """The smallest decode pool (whole nodes) whose step (``moe_decode_step``) meets the TPOT
    target with the weights and KV fitting in 90% of memory."""
    for gpus in range(GPUS_PER_NODE, 4097, GPUS_PER_NODE):
        row = moe_decode_step(gpus, qps, input_len, output_len, tpot_s, **kw)
        if row["ok"]:
            return row
    raise ValueError("no decode pool up to 4096 GPUs meets the TPOT target")


# DeepSeek's published figures for its own V3/R1 service (H800 nodes, one day, 2025-02-27/28):
# https://github.com/deepseek-ai/open-infra-index/blob/main/202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_inference_system_overview.md
DEEPSEEK_PUBLISHED = {
    "prefill_tokens_per_s_per_node": 73_700,      # input tokens, cache hits included
    "decode_tokens_per_s_per_node": 14_800,       # output tokens
    "cache_hit": 0.563,
    "input_tokens_per_day": 608e9,
    "output_tokens_per_day": 168e9,
    "nodes_mean": 226.75,
    "usd_per_gpu_hour": 2.0,                      # their assumed H800 rental price
    "output_tokens_per_s_per_user": (20, 22),
    "kv_length_per_output_token": 4989,           # mean context a decoded token attends to
    "decode_unit_gpus": 144,                      # decode: EP144 / DP144 over 18 nodes
    "redundant_experts": 32,                      # both phases; 2 routed experts per decode GPU
}

# Measured full-load rates of open-source stacks serving DeepSeek-V3/R1 with PD + wide EP (per GPU):
# SGLang on 12 nodes of 8 x H100 (2000-token inputs; 52.3k input and 22.3k output tokens/s per node):
# https://lmsys.org/blog/2025-05-05-large-scale-ep
# vLLM / llm-d on H200 with CX7 InfiniBand, multi-node wide EP ("2.2k tokens/s per H200 GPU"):
# https://blog.vllm.ai/2025/12/17/large-scale-serving.html
MEASURED_FULL_LOAD = (
    {"source": "SGLang, H100", "prefill_per_gpu": 52_300 / GPUS_PER_NODE, "decode_per_gpu": 22_300 / GPUS_PER_NODE},
    {"source": "vLLM, H200", "prefill_per_gpu": None, "decode_per_gpu": 2_200.0},
)


def measured_vs_roofline(prefill: dict, decode: dict, measured=MEASURED_FULL_LOAD,
                         published: dict = DEEPSEEK_PUBLISHED) -> list[dict]:
    """Each published per-GPU rate as a share of this chapter's roofline: the open-source stacks'
    full-load benchmarks and DeepSeek's own day average (prefill counted without cache hits)."""
    pub = deepseek_published_rates(published)
    rows = [dict(m) for m in measured] + [{"source": "DeepSeek, H800, day mean", "prefill_per_gpu": pub["prefill_uncached_per_gpu"],
                                           "decode_per_gpu": pub["decode_per_gpu"]}]
    for r in rows:
        p = r["prefill_per_gpu"]
        r["prefill_share"] = None if p is None else p / prefill["tokens_per_s_per_gpu"]
        r["decode_share"] = r["decode_per_gpu"] / decode["tokens_per_s_per_gpu"]
    return rows


MEASURED_COLUMNS = {"source": ("published", "{}"), "prefill_per_gpu": ("prefill tok/s/GPU", "{:,.0f}"),
                    "prefill_share": ("of roofline", "{:.2f}"), "decode_per_gpu": ("decode tok/s/GPU", "{:,.0f}"),
                    "decode_share": ("of roofline", "{:.2f}")}


def deepseek_published_rates(published: dict = DEEPSEEK_PUBLISHED) -> dict:
    """Per-GPU rates and cost of DeepSeek's published service: uncached prefill tokens/s per GPU
    (the node rate includes cache hits, which cost no compute), output tokens/s per GPU, GPU-hours
    and dollars per million output tokens over the day (the whole fleet, prefill and decode)."""
    p = published
    gpu_hours = p["nodes_mean"] * GPUS_PER_NODE * 24
    out_m = p["output_tokens_per_day"] / 1e6
    return {
        "prefill_uncached_per_gpu": p["prefill_tokens_per_s_per_node"] * (1 - p["cache_hit"]) / GPUS_PER_NODE,
        "decode_per_gpu": p["decode_tokens_per_s_per_node"] / GPUS_PER_NODE,
        "input_over_output": p["input_tokens_per_day"] / p["output_tokens_per_day"],
        "gpu_hours_per_million_output": gpu_hours / out_m,
        "usd_per_million_output": gpu_hours * p["usd_per_gpu_hour"] / out_m,
    }


def moe_gpu_range(qps: float = 500, input_len: int = 3000, output_len: int = 800, prefix_hit: float = 0.5,
                  prefill: dict | None = None, decode: dict | None = None, headroom: float = 1.3,
                  usd_per_gpu_hour: float = H200_USD_PER_HOUR, published: dict = DEEPSEEK_PUBLISHED) -> list[dict]:
    """Q1's pools two ways: at this chapter's roofline rates, and at the per-GPU rates DeepSeek
    published for its own H800 service (a floor: the H200 has the same FLOP/s and more memory
    bandwidth). Each row: GPUs per pool (prefill in whole EP32 instances, decode in whole nodes),
    the total with headroom, GPU-hours per million output tokens without and with the headroom
    (price-free, comparable with DeepSeek's own day: its input / output ratio is 3.6, this
    question's 3.75), and dollars per million output tokens at ``usd_per_gpu_hour``."""
    prefill = prefill or moe_prefill_gpus(qps, input_len, prefix_hit)
    decode = decode or moe_decode_gpus(qps, input_len, output_len)
    pub = deepseek_published_rates(published)
    out_per_h_m = qps * output_len * 3600 / 1e6
    rows = []
    for name, p_rate, d_rate, p_gpus, d_gpus in (
            ("roofline", prefill["tokens_per_s_per_gpu"], decode["tokens_per_s_per_gpu"], prefill["gpus"], decode["gpus"]),
            ("published rates", pub["prefill_uncached_per_gpu"], pub["decode_per_gpu"], None, None)):
        tokens = qps * input_len * (1 - prefix_hit)
        p_gpus = p_gpus or _up(tokens / p_rate, prefill["ep"])
        d_gpus = d_gpus or _up(qps * output_len / d_rate, GPUS_PER_NODE)
        total = _up(p_gpus * headroom, GPUS_PER_NODE) + _up(d_gpus * headroom, GPUS_PER_NODE)
        rows.append({"basis": name, "prefill_per_gpu": p_rate, "decode_per_gpu": d_rate, "prefill_gpus": p_gpus,
                     "decode_gpus": d_gpus, "gpus": total, "gpu_hours_per_m_bare": (p_gpus + d_gpus) / out_per_h_m,
                     "gpu_hours_per_m_output": total / out_per_h_m,
                     "usd_per_m_output": total * usd_per_gpu_hour / out_per_h_m})
    return rows


RANGE_COLUMNS = {"basis": ("basis", "{}"), "prefill_per_gpu": ("prefill tok/s/GPU", "{:,.0f}"),
                 "decode_per_gpu": ("decode tok/s/GPU", "{:,.0f}"), "prefill_gpus": ("prefill GPUs", "{}"),
                 "decode_gpus": ("decode GPUs", "{}"), "gpu_hours_per_m_bare": ("GPU-h/M out", "{:.3f}"),
                 "gpus": ("GPUs +30%", "{}"), "gpu_hours_per_m_output": ("GPU-h/M out +30%", "{:.3f}"),
                 "usd_per_m_output": ("$/M out +30%", "{:.2f}")}


def pd_kv_transfer(qps: float = 500, input_len: int = 3000, prefix_hit: float = 0.5, prefill_gpus: int = 96,
                   model: str = "deepseek-v3", nic_gbs: float = NIC_GBS, a2a_us_per_token: float | None = None,
                   decode: dict | None = None, ll_gbs: float = LL_GBS) -> dict:
    """What PD costs on the wire: the whole prompt's KV (cached part included: the decode rank has
    none of it) goes from the prefill rank to one decode rank (DP attention) once per request. KV
    per request, the aggregate rate, one transfer's time over one NIC, the share of the prefill
    pool's NICs, and the bytes per uncached token next to the prefill's all-to-all bytes.

    With ``decode`` (a ``moe_decode_step`` row) also the receiving side, where it matters more: the
    decode pool's NICs already carry the low-latency all-to-all that sets its step, so the KV
    arriving there (a share of their ``ll_gbs``) lengthens that all-to-all by the same share."""
    kv = input_len * moe_parts(model)["kv_bytes_per_token"]
    rate = qps * kv
    uncached = input_len * (1 - prefix_hit)
    a2a = a2a_bytes_per_token(32, model) if a2a_us_per_token is None else a2a_us_per_token * 1e-6 * nic_gbs * GB
    out = {"kv_mb_per_request": kv / 1e6, "aggregate_gbs": rate / GB,
           "transfer_ms_one_nic": kv / (nic_gbs * GB) * 1e3,
           "prefill_nic_share": rate / (prefill_gpus * nic_gbs * GB),
           "kv_over_a2a_bytes": kv / uncached / a2a}
    if decode is not None:
        share = rate / (decode["gpus"] * ll_gbs * GB)
        a2a_ms = decode["a2a_ms"] * (1 + share)
        others = max(decode["memory_ms"], decode["compute_ms"])
        out.update({"decode_nic_share": share, "decode_a2a_ms_with_kv": a2a_ms,
                    "decode_step_ms_with_kv": decode["step_ms"] - max(others, decode["a2a_ms"]) + max(others, a2a_ms)})
    return out


def moe_cost(prefill_gpus: int, decode_gpus: int, qps: float = 500, input_len: int = 3000,
             output_len: int = 800, headroom: float = 1.3, usd_per_gpu_hour: float = H200_USD_PER_HOUR) -> dict:
    """GPUs with headroom (both pools rounded up to whole nodes), dollars per hour, and dollars per
    million output tokens and per million tokens in and out."""
    gpus = _up(prefill_gpus * headroom, GPUS_PER_NODE) + _up(decode_gpus * headroom, GPUS_PER_NODE)
    usd_h = gpus * usd_per_gpu_hour
    return {
        "gpus_no_headroom": prefill_gpus + decode_gpus,
        "gpus": gpus,
        "usd_per_hour": usd_h,
        "usd_per_million_output": usd_h / (qps * output_len * 3600) * 1e6,
        "usd_per_million_all": usd_h / (qps * (input_len + output_len) * 3600) * 1e6,
    }


def free_prefill_tokens(setup) -> float:
    """Prompt tokens a decode step can carry at no extra time: the roofline step is the longer of
    the weight read and the compute, so a chunk whose FLOPs fit under the weight read is free."""
    read_s = setup.weight_bytes / setup.bandwidth
    return read_s * setup.peak_flops * setup.mfu / (2 * setup.params)


def deepseek_setup(prefix_cache: bool = True):
    """One DeepSeek-V3 instance the simulator can run: FP8 on one 8 x H200 node with TP=8 (no
    expert parallelism: the simulator has none), the chapters' explicit factors, paged KV and a
    prefix cache."""
    s = presets.instance("deepseek-v3", "h200", tp=8, weight_dtype="fp8", kv_dtype="fp8", mfu=0.4,
                         step_overhead=1.5e-3, bandwidth_util=1.0)
    return s.replace(kv=Paged(block_size=16), prefix_cache=PrefixCache() if prefix_cache else None)


def moe_load(rate: float, seconds: float = 60, input_len: int = 3000, output_len: int = 800,
             prompts: int = 4, seed: int = 0) -> Workload:
    """Q1's requests scaled down in rate: half of each prompt is one of ``prompts`` shared system
    prompts (so about half the prompt tokens can hit the prefix cache), the other half its own."""
    half = input_len // 2
    return workload.shared_prompts(rate, int(rate * seconds), prompts=prompts, system_len=half,
                                   input_len=input_len - half, output_len=output_len, seed=seed)


def pd_compare(rate: float, layouts=((8, 0), (2, 6), (3, 5)), ttft_slo: float = 2.0, tpot_slo: float = 0.05,
               seconds: float = 60) -> list[dict]:
    """Colocated versus prefill:decode splits on the same 8 instances (64 GPUs) at one rate.
    ``(n, 0)`` is n colocated instances; ``(p, d)`` p prefill and d decode instances. Prefix-aware
    routing in every case. Returns one row per layout: p99 TTFT / TPOT, the share of requests
    meeting both SLOs, goodput per GPU (SLO-meeting requests per second of the arrival window,
    so it equals rate / 64 whenever every request meets them), and whether the P99s meet the SLOs."""
    setup = deepseek_setup()
    load = moe_load(rate, seconds)
    rows = []
    for p, d in layouts:
        if d == 0:
            fleet = Fleet.of(setup, p, router="prefix_aware", gpus_per_instance=8)
            name = f"colocated x{p}"
        else:
            fleet = Fleet.pd(setup, p, setup, d, router="prefix_aware", gpus_per_instance=8)
            name = f"PD {p}:{d}"
        st = summarize_fleet(run_fleet(fleet, load), ttft_slo=ttft_slo, tpot_slo=tpot_slo)
        rows.append({"layout": name, "rate": rate, "ttft_p99_s": st["ttft_p99"], "tpot_p99_ms": st["tpot_p99"] * 1e3,
                     "slo_ok": st["slo_ok"], "goodput_per_gpu": st["goodput"] / fleet.gpus,
                     "p99_ok": "yes" if st["ttft_p99"] <= ttft_slo and st["tpot_p99"] <= tpot_slo else "no"})
    return rows


def format_rows(rows: list[dict], columns: dict) -> str:
    """Rows of dicts as an aligned text table; ``columns`` maps key -> (header, format)."""
    heads = [h for h, _ in columns.values()]
    cells = [["-" if r[k] is None else fmt.format(r[k]) for k, (_, fmt) in columns.items()] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    out = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths)))]
    for c in cells:
        out.append("  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(c, widths))))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Q2: a tiered KV pool for a 70B model (GPU / DRAM / SSD)
# ---------------------------------------------------------------------------------------------

KV70_BYTES_PER_TOKEN = KV_BYTES_PER_TOKEN          # Llama-3-70B, FP8 KV: 160 KiB (chapter 02's)


def chapter_instance(**overrides):
    """Chapter 02's instance (Llama-3-70B, FP8, 8 x H100, TP=8, the chapter's factors)."""
    return presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8", mfu=0.4,
                            step_overhead=1.5e-3, bandwidth_util=1.0, **overrides)


def kv_tiers(session_tokens: int = 10_000, sessions: int = 5000, kv_bytes_per_token: int = KV70_BYTES_PER_TOKEN,
             gpu_kv_gb: float | None = None, dram_gb: float = 1500, ssd_gb: float = 30_000) -> dict:
    """Per node (one 8 x H100 instance): how many tokens and sessions each tier holds, and the
    total KV the sessions need. ``gpu_kv_gb`` defaults to the chapter instance's KV space; DRAM
    and SSD are what a node can give the cache (1.5 TB of DRAM, 8 x 3.84 TB NVMe)."""
    if gpu_kv_gb is None:
        gpu_kv_gb = chapter_instance().kv_capacity_tokens * kv_bytes_per_token / GB
    per_session = session_tokens * kv_bytes_per_token
    out = {"kv_per_session_gb": per_session / GB, "all_sessions_tb": sessions * per_session / 1e12}
    for name, gb in (("gpu", gpu_kv_gb), ("dram", dram_gb), ("ssd", ssd_gb)):
        out[f"{name}_tokens_m"] = gb * GB / kv_bytes_per_token / 1e6
        out[f"{name}_sessions"] = int(gb * GB // per_session)
    return out


def readback_vs_recompute(tokens: int = 10_000, kv_bytes_per_token: int = KV70_BYTES_PER_TOKEN,
                          dram_gbs: float = 200, ssd_gbs: float = 48, setup=None) -> dict:
    """Time to bring back ``tokens`` of a session's KV from DRAM (8 GPUs x 25 GB/s of PCIe) or
    SSD (8 NVMe drives x 6 GB/s), against recomputing them (their matmul FLOPs at the instance's
    MFU; attention adds more for long histories, so this favours recompute); and the link speed
    below which recomputing wins."""
    setup = setup or chapter_instance()
    per_token_compute = 2 * setup.params / (setup.peak_flops * setup.mfu)
    return {
        "kv_gb": tokens * kv_bytes_per_token / GB,
        "dram_readback_ms": tokens * kv_bytes_per_token / (dram_gbs * GB) * 1e3,
        "ssd_readback_ms": tokens * kv_bytes_per_token / (ssd_gbs * GB) * 1e3,
        "recompute_ms": tokens * per_token_compute * 1e3,
        "break_even_gbs": kv_bytes_per_token / per_token_compute / GB,
    }


def kv_sessions(seed: int = 0) -> Workload:
    """Long chat sessions for one instance: 800 sessions at 3 per second, 8 turns each, a 2000-token
    system prompt (one of 4), 400-token messages and answers, 60 s between turns. Their histories
    (up to ~8,000 tokens each) outgrow the GPU's KV space while the users think."""
    return workload.multi_turn(rate=3, sessions=800, turns=8, system_len=2000, message_len=400,
                               output_len=400, think_s=60, prompts=4, seed=seed)


KV_TIER_OPTIONS = (("no cache", None),
                   ("gpu", PrefixCache()),
                   ("gpu+dram 200GB/s", PrefixCache(host_tokens=6_000_000, host_link_gbs=200)),
                   ("gpu+dram 5GB/s", PrefixCache(host_tokens=6_000_000, host_link_gbs=5)))
KV_TIER_COLUMNS = {"tiers": ("tiers", "{}"), "hit": ("hit", "{:.2f}"), "host_hit": ("host hit", "{:.2f}"),
                   "ttft_p50_ms": ("p50 TTFT ms", "{:.0f}"), "ttft_p99_ms": ("p99 TTFT ms", "{:,.0f}"),
                   "tpot_p99_ms": ("p99 TPOT ms", "{:.1f}"), "slo_ok": ("SLO met", "{:.1%}")}
PD_COLUMNS = {"layout": ("layout", "{}"), "rate": ("req/s", "{:.0f}"), "ttft_p99_s": ("p99 TTFT s", "{:.2f}"),
              "tpot_p99_ms": ("p99 TPOT ms", "{:.1f}"), "slo_ok": ("SLO met", "{:.1%}"),
              "goodput_per_gpu": ("goodput/GPU", "{:.2f}"), "p99_ok": ("P99 SLOs", "{}")}


def kv_tier_compare(options=KV_TIER_OPTIONS, ttft_slo: float = 1.0, tpot_slo: float = 0.05) -> list[dict]:
    """One chapter instance on ``kv_sessions()``: no prefix cache, GPU only, GPU + a 6M-token host
    tier (about 1 TB of DRAM) behind a 200 GB/s link, and the same tier behind a 5 GB/s link (below
    the break-even speed, so the instance recomputes instead of reading back)."""
    load = kv_sessions()
    rows = []
    for name, cache in options:
        st = summarize(run(chapter_instance(kv=Paged(block_size=16), prefix_cache=cache), load), ttft_slo, tpot_slo)
        rows.append({"tiers": name, "hit": st.get("prefix_hit_rate") or 0.0, "host_hit": st.get("host_hit_rate") or 0.0,
                     "ttft_p50_ms": st["ttft_p50"] * 1e3, "ttft_p99_ms": st["ttft_p99"] * 1e3,
                     "tpot_p99_ms": st["tpot_p99"] * 1e3, "slo_ok": st["slo_ok"]})
    return rows


# Mooncake's Transfer Engine measured up to 190 GB/s between nodes with 8 x 400 Gb/s RoCE NICs (the
# datasheet sum is 400 GB/s): https://github.com/kvcache-ai/Mooncake (README, "Performance").
MOONCAKE_8X400_GBS = 190.0


def dram_placement(sessions: int = 5000, nodes: int = 16, session_tokens: int = 10_000,
                   kv_bytes_per_token: int = KV70_BYTES_PER_TOKEN, dram_gb: float = 1500,
                   pcie_gbs: float = 200, rdma_gbs: float = MOONCAKE_8X400_GBS) -> dict:
    """Where the DRAM tier lives. Per node: a returning session hits its KV only on the node that
    holds it (1 / nodes of the time without session affinity; always with it, at the cost of
    balance), and a node failure loses its sessions' KV. Pooled (an RDMA store across the nodes,
    Mooncake-style): every node reads any session, capacity adds up, and a read goes over the
    network (8 x 400 Gb/s per node, at the ``rdma_gbs`` Mooncake measured on such NICs) and then the
    same PCIe, so it runs at the narrower of the two. Capacity in sessions both ways, and one
    session's read-back time each way (no contention: a busy source node or NIC makes it slower)."""
    per_session = session_tokens * kv_bytes_per_token
    per_node = int(dram_gb * GB // per_session)
    return {"sessions_per_node_dram": per_node, "pooled_sessions": nodes * per_node,
            "pooled_covers_all": nodes * per_node >= sessions,
            "hit_without_affinity": 1 / nodes,
            "local_readback_ms": per_session / (pcie_gbs * GB) * 1e3,
            "pooled_readback_ms": per_session / (min(pcie_gbs, rdma_gbs) * GB) * 1e3,
            "sessions_lost_per_node_failure": sessions / nodes}


# ---------------------------------------------------------------------------------------------
# Q3: a cache-aware gateway for 200 instances at 5000 QPS
# ---------------------------------------------------------------------------------------------

def prefix_index(instances: int = 200, qps: float = 5000, prompt_tokens: int = 3000,
                 kv_tokens_per_instance: int | None = None, block_tokens: int = 16,
                 entry_bytes: int = 48, hit_rate: float = 0.86, output_tokens: int = 300,
                 tokens_per_s_per_core: float = 1e6) -> dict:
    """A global prefix index: one entry per cached block per instance (a 64-bit chain hash, an
    instance id, LRU links, hash-table overhead: about ``entry_bytes``). Its size if it mirrors
    every instance's GPU cache, and the update rate: each request's blocks are looked up; the
    missed ones (1 - ``hit_rate``) are computed and inserted, and so is every block its
    ``output_tokens`` fill while decoding; as many are evicted once the caches are full. The gateway must also tokenise every prompt to hash its blocks: cores at
    ``tokens_per_s_per_core`` (an assumption; measure the tokenizer)."""
    if kv_tokens_per_instance is None:
        kv_tokens_per_instance = chapter_instance().kv_capacity_tokens
    blocks = instances * kv_tokens_per_instance / block_tokens
    per_request = prompt_tokens / block_tokens
    return {
        "blocks_m": blocks / 1e6,
        "index_gb": blocks * entry_bytes / GB,
        "lookups_per_s_m": qps * per_request / 1e6,
        "inserts_per_s_m": qps * (per_request * (1 - hit_rate) + output_tokens / block_tokens) / 1e6,
        "events_per_s_m": 2 * qps * (per_request * (1 - hit_rate) + output_tokens / block_tokens) / 1e6,
        "tokenise_m_tokens_per_s": qps * prompt_tokens / 1e6,
        "tokeniser_cores": qps * prompt_tokens / tokens_per_s_per_core,
        "qps_per_instance": qps / instances,
        "sessions_moved_on_failure": 1 / instances,
    }


def sessions(session_rate: float, instances: int, *, turns: int = 6, think_s: float = 5.0,
             seconds: float = 30, system_len: int = 1000, message_len: int = 300, output_len: int = 300,
             prompts: int = 8, seed: int = 0) -> Workload:
    """Multi-turn chat for a fleet, with think times that vary (uniform in [0.5, 1.5] x think_s).

    ``sim.workload.multi_turn`` spaces a session's turns exactly ``think_s`` apart; with a fixed
    gap, round-robin can send a session's turns to the same instance by coincidence (the number of
    requests between two turns is then the number of live sessions). Jittered gaps remove that
    artefact. ``session_rate`` sessions start per second per instance, for ``seconds``."""
    base = workload.multi_turn(rate=session_rate * instances, sessions=max(1, int(session_rate * instances * seconds)),
                               turns=turns, system_len=system_len, message_len=message_len, output_len=output_len,
                               think_s=think_s, prompts=prompts, seed=seed)
    rng = np.random.default_rng([seed, 7])
    arrival = np.array(base.arrival, dtype=float)
    follows = np.array(base.follows)
    new = arrival.copy()
    for i in np.argsort(arrival, kind="stable"):          # a turn's time = previous turn's + jittered gap
        if follows[i] >= 0:
            new[i] = new[follows[i]] + think_s * rng.uniform(0.5, 1.5)
    order = np.argsort(new, kind="stable")
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    pick = lambda xs: tuple(xs[i] for i in order)          # noqa: E731
    return Workload("multi_turn", tuple(float(new[i]) for i in order), pick(base.input_len), pick(base.output_len),
                    think_s=base.think_s, prefix=pick(base.prefix),
                    follows=tuple(int(pos[f]) if f >= 0 else -1 for f in (follows[i] for i in order)),
                    session=pick(base.session))


ROUTER_OPTIONS = ("round_robin", "least_requests", "session_affinity", "prefix_aware")
ROUTER_ZH = {"round_robin": "轮询", "least_requests": "最少请求", "session_affinity": "会话亲和",
             "prefix_aware": "前缀感知"}
TTFT_SLO_S, TPOT_SLO_S = 1.0, 0.05
FAIL_AT_S, DETECT_S = 20.0, 5.0


@dataclass(frozen=True)
class GatewayRun:
    router: str
    instances: int
    session_rate: float
    failure: bool
    requests: int
    qps: float
    hit: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    slo_ok: float
    imbalance: float
    retries: int
    per_instance: tuple          # requests served by each instance
    windows: tuple               # (window start s, SLO attainment) per 5 s of arrivals

    def row(self) -> dict:
        return {"router": self.router, "failure": "yes" if self.failure else "no", "hit": self.hit,
                "ttft_p50_ms": self.ttft_p50_s * 1e3, "ttft_p99_ms": self.ttft_p99_s * 1e3,
                "slo_ok": self.slo_ok, "imbalance": self.imbalance, "retries": self.retries}


def gateway(router: str = "prefix_aware", instances: int = 8, session_rate: float = 4.0, failure: bool = False,
            seconds: float = 30, seed: int = 0) -> GatewayRun:
    """Q3 scaled down: ``instances`` chapter-02 instances (Llama-3-70B, 8 x H100 each, paged KV and
    a prefix cache) behind ``router``, multi-turn sessions (``sessions``) at ``session_rate`` new
    sessions per second per instance (x 6 turns: about 24 requests/s per instance at the default, as
    5000 QPS over 200 instances is 25). With ``failure``, instance 0 dies at 20 s and the gateway
    notices 5 s later, then retries its lost requests elsewhere."""
    if router not in ROUTER_OPTIONS:
        raise ValueError(f"router must be one of {ROUTER_OPTIONS}, got {router!r}")
    setup = chapter_instance(kv=Paged(block_size=16), prefix_cache=PrefixCache())
    load = sessions(session_rate, instances, seconds=seconds, seed=seed)
    fails = Failures(at=((FAIL_AT_S, 0),), detect_s=DETECT_S, retries=1) if failure else None
    fleet = Fleet.of(setup, instances, router=router, gpus_per_instance=8, failures=fails, seed=seed)
    result = run_fleet(fleet, load, sessions=load.session)
    st = summarize_fleet(result, ttft_slo=TTFT_SLO_S, tpot_slo=TPOT_SLO_S, window_s=5.0)
    served = result.instance[result.instance >= 0]
    counts = np.bincount(served, minlength=instances)
    return GatewayRun(router, instances, session_rate, failure, len(load), len(load) / load.arrival[-1],
                      st["prefix_hit_rate"], st["ttft_p50"], st["ttft_p99"], st["tpot_p99"], st["slo_ok"],
                      st["colocated_imbalance"], st["retries"], tuple(int(c) for c in counts),
                      tuple((w, ok) for w, _, ok in st["slo_by_window"]))


GATEWAY_COLUMNS = {"router": ("router", "{}"), "failure": ("failure", "{}"), "hit": ("hit", "{:.2f}"),
                   "ttft_p50_ms": ("p50 TTFT ms", "{:.0f}"), "ttft_p99_ms": ("p99 TTFT ms", "{:,.0f}"),
                   "slo_ok": ("SLO met", "{:.1%}"), "imbalance": ("imbalance", "{:.2f}"), "retries": ("retries", "{}")}


# The panel's runs: from the shipped table where it holds the position (course.memo; the positions
# are course.panel_grids.chapter_03's, computed by `python -m course.memo build 03` for the code as
# it is), else live; cached, so moving a control back is instant.
_gateway_cached = lru_cache(maxsize=64)(memo.shipped("ch03.gateway", "course/ch03.py")(gateway))


def gateway_chart(run_: GatewayRun, title: str = ""):
    """Two plots: requests served per instance (left) and SLO attainment per 5 s of arrivals
    (right, the failure and its detection marked)."""
    from course.plots import Chart
    chart = Chart(2, title=title or f"{ROUTER_ZH[run_.router]}，{run_.instances} 个实例"
                  + ("，实例 0 故障" if run_.failure else ""))
    ids = np.arange(run_.instances)
    chart.add(0, "请求数", ids, run_.per_instance, color="#1f77b4")
    chart.axes(0, xlabel="实例编号", ylabel="处理的请求数", xlim=(-0.5, run_.instances - 0.5),
               ylim=(0, max(run_.per_instance) * 1.15 + 1))
    t = [w + 2.5 for w, _ in run_.windows]
    chart.add(1, "达标比例", t, [ok for _, ok in run_.windows], color="#2ca02c")
    chart.hline(1, "目标 99%", 0.99, color="#d62728")
    if run_.failure:
        chart.vline(1, "故障", FAIL_AT_S, color="#7f7f7f")
        chart.vline(1, "发现故障", FAIL_AT_S + DETECT_S, color="#ff7f0e")
    chart.axes(1, xlabel="到达时间 (s)", ylabel="满足 SLO 的比例", ylim=(0, 1.05))
    return chart


def gateway_html(run_: GatewayRun) -> str:
    rows = [("请求数 / 平均到达速率", f"{run_.requests:,} / {run_.qps:.0f} req/s"),
            ("前缀命中率", f"{run_.hit:.2f}"),
            ("TTFT p50 / p99", f"{run_.ttft_p50_s * 1e3:.0f} ms / {run_.ttft_p99_s * 1e3:.0f} ms"),
            ("TPOT p99", f"{run_.tpot_p99_s * 1e3:.1f} ms"),
            ("满足 SLO（TTFT ≤ 1 s，TPOT ≤ 50 ms）", f"{run_.slo_ok:.1%}"),
            ("负载不均衡（最多 / 平均）", f"{run_.imbalance:.2f}"),
            ("重试的请求", f"{run_.retries}")]
    return rows_html(rows)


class GatewayPanel(Live):
    """The chapter's panel: router, instances, new sessions per second per instance, and a failure
    switch; shows ``gateway``'s figures and ``gateway_chart``. Like chapter 02's panels, a change
    runs in a worker thread (``background=True``, in a notebook) with a busy line, and a newer
    change supersedes an older one; ``background=False`` (tests) runs it in the caller. ``update()``
    is what a change runs (tests set the controls, or call it; no kernel needed)."""

    INSTANCE_OPTIONS = (4, 6, 8, 12, 16)
    RATE_OPTIONS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)

    def __init__(self, router: str = "prefix_aware", instances: int = 8, session_rate: float = 4.0,
                 failure: bool = True, background: bool = True):
        import ipywidgets as w
        style = {"description_width": "120px"}
        self.controls = {
            "router": w.Dropdown(options=[(f"{ROUTER_ZH[r]}（{r}）", r) for r in ROUTER_OPTIONS], value=router,
                                 description="路由策略", style=style),
            "instances": w.SelectionSlider(options=self.INSTANCE_OPTIONS, value=instances, description="实例数",
                                           continuous_update=False, style=style),
            "session_rate": w.SelectionSlider(options=self.RATE_OPTIONS, value=session_rate,
                                              description="每实例每秒新会话", continuous_update=False, style=style),
            "failure": w.Checkbox(value=failure, description="20 s 时实例 0 故障", style=style),
        }
        self.busy = w.HTML("")
        self.figures = w.HTML("")
        self.chart = w.HTML("")
        self.widget = w.VBox([w.HBox([self.controls["router"], self.controls["failure"]]),
                              w.HBox([self.controls["instances"], self.controls["session_rate"]]),
                              self.busy, self.figures, self.chart])
        self.last = None
        self._init_live(background)
        for name, c in self.controls.items():
            c.observe(lambda change, name=name: self._request(name), names="value")
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self, control: str | None = None, current=lambda: True) -> bool:
        """Simulate the controls' setting and show it; False (showing nothing) when a newer change
        came meanwhile."""
        run = _gateway_cached(**self.values())
        if not current():
            return False
        self.last = run
        self.figures.value = gateway_html(run)
        self.chart.value = gateway_chart(run).svg()
        return True


def gateway_panel(**kwargs) -> GatewayPanel:
    return GatewayPanel(**kwargs)


# ---------------------------------------------------------------------------------------------
# Q4: a multi-LoRA platform
# ---------------------------------------------------------------------------------------------

def lora_adapter(model: str = "llama-3-8b", rank: int = 16, dtype_bytes: int = 2) -> dict:
    """Bytes of one LoRA adapter on every linear layer (q, k, v, o, gate, up, down): each adds
    A (d_in x r) and B (r x d_out), so rank x (d_in + d_out) parameters per matrix per layer."""
    m = presets.model(model)
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    dims = [(m.hidden, q), (m.hidden, kv), (m.hidden, kv), (q, m.hidden),
            (m.hidden, m.intermediate), (m.hidden, m.intermediate), (m.intermediate, m.hidden)]
    params = m.layers * rank * sum(a + b for a, b in dims)
    return {"params_m": params / 1e6, "adapter_mb": params * dtype_bytes / 1e6,
            "share_of_base": params / m.total_params}


def lora_fit(adapter_mb: float, gpu_slots_gb: float = 8.0, dram_gb: float = 500) -> dict:
    """How many adapters fit in the GPU memory set aside for them, and in host DRAM."""
    return {"on_gpu": int(gpu_slots_gb * 1e3 // adapter_mb), "in_dram": int(dram_gb * 1e3 // adapter_mb)}


def lora_swap(adapter_mb: float, pcie_gbs: float = 25, ssd_gbs: float = 6, remote_gbs: float = 1.25,
              tpot_s: float | None = None, model: str = "llama-3-8b") -> dict:
    """Time to load one adapter into the GPU from DRAM (PCIe), local NVMe, or a remote store
    (10 Gb/s), and the same in decode steps of ``tpot_s``; by default the base model's own step
    (its weight read, ``lora_batch_overhead``'s ``base_read_ms``: a small-batch step is that read)."""
    if tpot_s is None:
        tpot_s = lora_batch_overhead(1, model)["base_read_ms"] / 1e3
    out = {"step_ms": tpot_s * 1e3}
    for name, gbs in (("dram", pcie_gbs), ("ssd", ssd_gbs), ("remote", remote_gbs)):
        s = adapter_mb * 1e6 / (gbs * GB)
        out[f"{name}_ms"] = s * 1e3
        out[f"{name}_steps"] = s / tpot_s
    return out


def lora_batch_overhead(distinct: int, model: str = "llama-3-8b", rank: int = 16, batch: int = 64,
                        gpu: str = "h100-sxm", weight_bytes_per_param: int = 2) -> dict:
    """One decode step with ``distinct`` different adapters in a batch of ``batch`` requests: the
    step reads the base weights once and each distinct adapter once (a segmented / gathered
    LoRA matmul, Punica SGMV or S-LoRA style); the extra FLOPs are tiny next to the extra bytes."""
    m, g = presets.model(model), presets.gpu(gpu)
    base = m.total_params * weight_bytes_per_param
    ad = lora_adapter(model, rank, weight_bytes_per_param)
    extra = distinct * ad["adapter_mb"] * 1e6
    return {"base_read_ms": base / g.bandwidth * 1e3, "adapters_read_ms": extra / g.bandwidth * 1e3,
            "step_overhead": extra / base, "extra_flops_share": ad["share_of_base"],
            "batch": batch, "distinct": distinct}


# ---------------------------------------------------------------------------------------------
# Q5: an RL rollout service
# ---------------------------------------------------------------------------------------------

def rollout_tokens(prompts: int = 512, samples: int = 16, input_len: int = 1000, mean_output: int = 4000) -> dict:
    """Tokens one RL step generates: prompts x samples sequences (GRPO-style groups); the prompts
    are shared inside a group, so prefix caching prefills each once."""
    seqs = prompts * samples
    return {"sequences": seqs, "decode_tokens_m": seqs * mean_output / 1e6,
            "prefill_tokens_m": prompts * input_len / 1e6,
            "prefill_tokens_no_sharing_m": seqs * input_len / 1e6}


def weight_sync(weight_gb: float = 70.6, instances: int = 16, sender_gbs: float = 400,
                receiver_gbs: float = 400, hop_s: float = 0.002, disk_gbs: float = 2.0) -> dict:
    """New weights from the trainer to every rollout instance: pushed to each (the sender's
    ``sender_gbs`` is shared), relayed along a chain of instances (each hop adds ``hop_s``), or
    saved and reloaded through a checkpoint on shared storage at ``disk_gbs`` per reader."""
    b = weight_gb * GB
    return {"push_s": max(instances * b / (sender_gbs * GB), b / (receiver_gbs * GB)),
            "relay_s": max(b / (sender_gbs * GB), b / (receiver_gbs * GB)) + instances * hop_s,
            "checkpoint_s": b / (disk_gbs * GB)}


# A production counterpart: Moonshot's checkpoint-engine (Mooncake's P2P store) updates Kimi-K2's 1T
# parameters on thousands of inference GPUs in about 20 s (https://github.com/kvcache-ai/Mooncake, README).
CHECKPOINT_ENGINE_PUBLISHED = {"params_b": 1000, "gpus": "thousands", "update_s": 20}


def rollout_tail(requests: int = 256, input_len: int = 1000, mean_output: int = 4000, cv: float = 1.0,
                 max_output: int = 16_000, seed: int = 0) -> dict:
    """One synchronous rollout batch on one chapter instance (scaled down from a full RL step):
    every request at t = 0, outputs lognormal (mean ``mean_output``, CV ``cv``, capped). How long
    the batch takes, when 90% of its requests have finished, the share of the tokens made by then,
    and the tokens/s up to that point versus over the whole batch (``tail_efficiency``, what the
    synchronous GPU count divides by)."""
    setup = chapter_instance()
    load = workload.offline(requests, input_len, lengths.lognormal(mean_output, cv, low=16, high=max_output), seed=seed)
    res = run(setup, load)
    makespan = float(res.finish.max())
    t90 = float(np.sort(res.finish)[int(math.ceil(0.9 * requests)) - 1])
    span = np.maximum(res.finish - res.first_token, 1e-12)        # tokens come out evenly in between
    by_t90 = float((res.output_len * np.clip((t90 - res.first_token) / span, 0, 1)).sum())
    tokens = float(res.output_len.sum())
    full, overall = by_t90 / t90, tokens / makespan
    return {"requests": requests, "mean_output": float(res.output_len.mean()), "max_output": int(res.output_len.max()),
            "makespan_s": makespan, "t90_s": t90, "tail_share": (makespan - t90) / makespan,
            "tokens_by_t90": by_t90 / tokens, "tokens_per_s_to_t90": full, "tokens_per_s_overall": overall,
            "tail_efficiency": overall / full}


def gateway_compare(failure: bool, routers=ROUTER_OPTIONS, **kw) -> str:
    """``gateway`` for each router, as a text table (the notebook prints it)."""
    return format_rows([gateway(r, failure=failure, **kw).row() for r in routers], GATEWAY_COLUMNS)


def rollout_wave(instances: int, sequences: int = 8192, input_len: int = 1000, mean_output: int = 4000,
                 cv: float = 1.0, max_output: int = 16_000, seed: int = 0) -> dict:
    """One synchronous RL step on ``instances`` chapter instances: each gets its share of the
    step's ``sequences`` at t = 0 (outputs lognormal as in ``rollout_tail``, capped at
    ``max_output``) and the step ends when the last one finishes, so one instance's makespan is
    the step's rollout time. Also the longest sample's own decode time (first to last token) and
    its mean TPOT: the bound no GPU count removes, since one sequence decodes one token per step."""
    if instances < 1:
        raise ValueError(f"instances must be >= 1, got {instances!r}")
    share = math.ceil(sequences / instances)
    setup = chapter_instance()
    load = workload.offline(share, input_len, lengths.lognormal(mean_output, cv, low=16, high=max_output), seed=seed)
    res = run(setup, load)
    longest = int(np.argmax(res.output_len))
    decode_s = float(res.finish[longest] - res.first_token[longest])
    full_until = float(res.first_token.max())                # the queue is empty after the last admission
    span = np.maximum(res.finish - res.first_token, 1e-12)
    made = float((res.output_len * np.clip((full_until - res.first_token) / span, 0, 1)).sum())
    return {"instances": instances, "gpus": instances * 8, "sequences_per_instance": share,
            "makespan_s": float(res.finish.max()), "full_batch_tps": made / full_until if full_until > 0 else 0.0,
            "tokens": int(res.output_len.sum()), "longest_tokens": int(res.output_len[longest]),
            "longest_decode_s": decode_s, "longest_tpot_ms": decode_s / (int(res.output_len[longest]) - 1) * 1e3,
            "preemptions": int(res.preemptions.sum()) if res.preemptions is not None else 0}


WAVE_COLUMNS = {"instances": ("instances", "{}"), "gpus": ("GPUs", "{}"),
                "sequences_per_instance": ("seqs/instance", "{:,}"), "makespan_s": ("step rollout s", "{:.0f}"),
                "longest_decode_s": ("longest sample s", "{:.0f}"), "longest_tpot_ms": ("its TPOT ms", "{:.1f}"),
                "preemptions": ("preemptions", "{:,}")}


def rollout_sizing(waves: list[dict], budget_s: float = 300, sequences: int = 8192, mean_output: int = 4000) -> dict:
    """Instances for one RL step within ``budget_s``. Synchronous: the fewest of the simulated
    ``waves`` (``rollout_wave`` rows) whose step finishes in time. Asynchronous (partial rollouts
    carried over, so instances stay at full batch): the step's tokens over the full-batch rate
    (the largest wave's, measured while its queue was non-empty) times the budget. None: no
    simulated wave is fast enough."""
    fits = [w["instances"] for w in waves if w["makespan_s"] <= budget_s]
    rate = max(waves, key=lambda w: w["sequences_per_instance"])["full_batch_tps"]
    asynchronous = sequences * mean_output / (rate * budget_s)
    return {"budget_s": budget_s, "sync_instances": min(fits) if fits else None,
            "async_instances": math.ceil(asynchronous), "async_exact": asynchronous, "full_batch_tps": rate}
