"""Chapter 04 (design answers II, questions 6-10): the hand estimates, the simulations the chapter
runs, and its one panel (speculative decoding as a service).

Every estimate is one small function, so the notebook prints it as a table and the tests check it
by hand. Units follow the course: ``_s`` seconds, ``_gb`` 1e9 bytes, ``_gbs`` 1e9 bytes per second.

The simulations use ``sim``: single instances with ``sim.speculative.Speculative`` (Q7), fleets with
an autoscaler and cold starts (Q9) and with a region's instances failing together (Q10). They are
scaled down to run in seconds on two cores; the notebook says how.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from course import memo, plots
from sim import presets, workload
from sim.fleet import Autoscaler, Failures, Fleet, cold_start_s, run_fleet, summarize_fleet
from sim.fleet import load as fleet_load
from sim.metrics import summarize
from sim.setup import Setup
from sim.speculative import Speculative
from sim.workload import run
from course.kit import rows_html

GB = 1e9
DTYPE_BYTES = presets.DTYPE_BYTES


# --- Q6: 1M-token context ------------------------------------------------------------------------

def kv_bytes_per_token(model: str, kv_dtype: str = "fp8", tp: int = 1) -> float:
    """KV-cache bytes of one token over an instance of ``tp`` GPUs (MLA's latent is replicated on
    every tensor-parallel GPU; GQA's KV heads are split across them)."""
    return float(presets.kv_bytes_per_token(presets.model(model), tp, kv_dtype))


def kv_gb(model: str, tokens: int, kv_dtype: str = "fp8", tp: int = 1) -> float:
    """GB of KV cache that ``tokens`` tokens of one sequence occupy over ``tp`` GPUs."""
    return tokens * kv_bytes_per_token(model, kv_dtype, tp) / GB


def attention_pairs(tokens: int, keys_per_query: int | None = None) -> int:
    """(query, key) pairs a causal prefill of ``tokens`` computes: n (n + 1) / 2 when dense; when
    each query attends to at most ``keys_per_query`` selected keys (sparse attention), the sum of
    min(i + 1, keys_per_query) over the queries."""
    n = int(tokens)
    if keys_per_query is None or keys_per_query >= n:
        return n * (n + 1) // 2
    k = int(keys_per_query)
    return k * (k + 1) // 2 + (n - k) * k


def prefill_flops(model: str, tokens: int, keys_per_query: int | None = None) -> tuple[float, float]:
    """(linear FLOPs, attention FLOPs) of one prefill: 2 x active parameters per token for the
    matmuls, and the model's attention FLOPs per (query, key) pair times the pairs."""
    m = presets.model(model)
    linear = 2.0 * (m.active_params - m.embedding_params) * tokens
    attention = float(m.attention_flops_per_pair()) * attention_pairs(tokens, keys_per_query)
    return linear, attention


def prefill_s(flops: float, gpus: int, gpu: str = "h200", dtype: str = "fp8", mfu: float = 0.4) -> float:
    """Seconds to compute ``flops`` on ``gpus`` GPUs at ``mfu`` of their dense peak in ``dtype``."""
    return flops / (gpus * presets.gpu(gpu).flops(dtype) * mfu)


# DeepSeek-V3.2's sparse attention (DSA), from its config (index_n_heads 64, index_head_dim 128,
# index_topk 2048: https://huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp/blob/main/config.json):
# a "lightning indexer" scores every earlier key for each query (FP8), then the main attention runs
# in MLA's absorbed (MQA) form over the 2048 keys it picked.
INDEX_HEADS, INDEX_DIM, INDEX_TOPK = 64, 128, 2048
# V3.2's FP8 caches as the serving kernels store them. The latent: FlashMLA's "FP8 with scale" format,
# 512 FP8 values + 4 FP32 scales (one per 128) + the 64-wide RoPE part kept in BF16 = 656 bytes per
# token per layer (https://github.com/deepseek-ai/FlashMLA, README, "FP8 KV Cache"), not 576. The
# indexer key: 128 FP8 values + one FP32 scale = 132 bytes (SGLang's and TensorRT-LLM's indexer caches).
V32_LATENT_BYTES = 512 + 4 * 4 + 64 * 2
INDEX_KEY_BYTES = INDEX_DIM + INDEX_DIM // 128 * 4
# FlashMLA's sparse prefill kernel: up to 640 TFLOP/s (BF16) on the H800, about 0.65 of its peak.
SPARSE_ATTN_UTIL = 0.6


def indexer_flops_per_pair(model: str = "deepseek-v3", heads: int = INDEX_HEADS, dim: int = INDEX_DIM) -> float:
    """The indexer's FLOPs per (query, key) pair over all layers: a dot product per indexer head."""
    return 2.0 * presets.model(model).layers * heads * dim


def absorbed_flops_per_pair(model: str = "deepseek-v3") -> float:
    """MLA attention per pair in the absorbed form (scores over the 576-wide latent, sums over the
    512-wide one, every head): what DSA's sparse attention and MLA decode compute."""
    m = presets.model(model)
    return 2.0 * m.layers * m.heads * (2 * m.kv_lora_rank + m.rope_dim)


def dsa_prefill_s(tokens: int, gpus: int = 8, model: str = "deepseek-v3", topk: int = INDEX_TOPK,
                  gpu: str = "h200", mfu: float = 0.4, attn_util: float = SPARSE_ATTN_UTIL) -> dict:
    """One DSA prefill of ``tokens`` on ``gpus`` GPUs, by part: the linear layers (FP8 at ``mfu``),
    the indexer over every causal pair (FP8 at ``mfu``: light per pair, but still quadratic), and the
    sparse attention over ``topk`` keys per query (absorbed form, BF16 at ``attn_util``, FlashMLA's
    measured share of peak). Seconds per part and in total."""
    linear, _ = prefill_flops(model, tokens)
    indexer = indexer_flops_per_pair(model) * attention_pairs(tokens)
    sparse = absorbed_flops_per_pair(model) * attention_pairs(tokens, topk)
    out = {"linear_s": prefill_s(linear, gpus, gpu, "fp8", mfu), "indexer_s": prefill_s(indexer, gpus, gpu, "fp8", mfu),
           "sparse_attention_s": prefill_s(sparse, gpus, gpu, "bf16", attn_util)}
    out["total_s"] = sum(out.values())
    out["indexer_share"] = out["indexer_s"] / out["total_s"]
    return out


def dsa_index_gb(tokens: int, model: str = "deepseek-v3", key_bytes: int = INDEX_KEY_BYTES) -> float:
    """GB of DSA's indexer keys for ``tokens`` tokens (one FP8 key with its scale, ``key_bytes``, per
    token per layer, shared by the indexer's heads, so replicated on every tensor-parallel GPU like
    MLA's latent), cached next to the latent."""
    return tokens * presets.model(model).layers * key_bytes / GB


def dsa_latent_gb(tokens: int, model: str = "deepseek-v3", latent_bytes: int = V32_LATENT_BYTES) -> float:
    """GB of V3.2's latent cache for ``tokens`` tokens in the FP8 format its kernels read
    (``V32_LATENT_BYTES`` per token per layer, scales and the BF16 RoPE part included)."""
    return tokens * presets.model(model).layers * latent_bytes / GB


def free_kv_gb_per_gpu(model: str, gpus: int = 8, gpu: str = "h200", weight_dtype: str = "fp8",
                       memory_util: float = 0.9) -> float:
    """GB per GPU left for KV once the weights (split over ``gpus``) are loaded, of ``memory_util``
    of its memory (activations and CUDA graphs take the rest)."""
    m, g = presets.model(model), presets.gpu(gpu)
    return (g.memory * memory_util - m.total_params * DTYPE_BYTES[weight_dtype] / gpus) / GB


def decode_kv_read_ms(model: str, tokens: int, tp: int = 8, gpu: str = "h200", kv_dtype: str = "fp8",
                      indexer_only: bool = False) -> float:
    """Milliseconds per decode step one sequence of ``tokens`` costs in KV reads on each GPU of a
    TP group (MLA's latent is read whole on every GPU, GQA's heads are split). ``indexer_only``:
    DSA reads the indexer's keys (``INDEX_KEY_BYTES`` per token per layer) for every token and the
    latent, in V3.2's FP8 format (``V32_LATENT_BYTES``), only for the ``INDEX_TOPK`` picked ones."""
    g, m = presets.gpu(gpu), presets.model(model)
    if indexer_only:
        per_gpu = (tokens * INDEX_KEY_BYTES + min(tokens, INDEX_TOPK) * V32_LATENT_BYTES) * m.layers
    else:
        per_gpu = tokens * kv_bytes_per_token(model, kv_dtype, tp) / tp
    return per_gpu / g.bandwidth * 1e3


# --- Q7: speculative decoding ----------------------------------------------------------------------

def tokens_per_step(k: int, alpha: float) -> float:
    """Expected tokens one verification step emits with ``k`` drafts accepted i.i.d. at ``alpha``:
    1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha)."""
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def spec_speedup(k: int, alpha: float, draft_cost: float) -> float:
    """Low-load TPOT speedup: tokens per step over the step's cost (1 target pass + k draft passes
    of ``draft_cost`` each), valid while the step is memory-bound."""
    return tokens_per_step(k, alpha) / (1 + k * draft_cost)


def best_draft_length(alpha: float, draft_cost: float, k_max: int = 16) -> tuple[int, float]:
    """(k, speedup) maximising ``spec_speedup`` over k = 1..k_max."""
    return max(((k, spec_speedup(k, alpha, draft_cost)) for k in range(1, k_max + 1)), key=lambda x: x[1])


SPEC_INPUT, SPEC_OUTPUT = 1000, 256          # a chat turn: the prompt and the answer's tokens
CLIENTS = (1, 4, 16, 64, 256)


def spec_setup(base: Setup, k: int, alpha: float, draft_cost: float) -> Setup:
    """``base`` with speculative decoding (k drafts at acceptance alpha, draft_cost per pass)."""
    return dataclasses.replace(base, speculative=Speculative(k=k, alpha=alpha, draft_cost=draft_cost))


@lru_cache(maxsize=512)
@memo.shipped("ch04.closed_loop_run", "course/ch04.py", "course/panel.py")
def closed_loop_run(setup: Setup, clients: int) -> dict:
    """``clients`` users each sending the next request as soon as the last is answered
    (SPEC_INPUT in, SPEC_OUTPUT out, 4 requests per client, at least 32): mean TPOT (s) and output
    tokens per second of the instance."""
    n = max(4 * clients, 32)
    s = summarize(run(setup, workload.closed_loop(clients, n, SPEC_INPUT, SPEC_OUTPUT)), None, None)
    return {"tpot_s": s["tpot_mean"], "tokens_per_s": s["output_tps"]}


@dataclass(frozen=True)
class SpecPoint:
    clients: int
    tpot_plain_s: float
    tpot_spec_s: float
    tps_plain: float
    tps_spec: float

    @property
    def speedup(self) -> float:
        """TPOT without over TPOT with speculative decoding (> 1: faster per user)."""
        return self.tpot_plain_s / self.tpot_spec_s

    @property
    def throughput_gain(self) -> float:
        return self.tps_spec / self.tps_plain


def spec_vs_load(base: Setup, k: int, alpha: float, draft_cost: float, clients=CLIENTS) -> list[SpecPoint]:
    """One ``SpecPoint`` per client count: the same closed loop with and without drafts."""
    spec = spec_setup(base, k, alpha, draft_cost)
    out = []
    for c in clients:
        a, b = closed_loop_run(base, c), closed_loop_run(spec, c)
        out.append(SpecPoint(c, a["tpot_s"], b["tpot_s"], a["tokens_per_s"], b["tokens_per_s"]))
    return out


def simulated_best_k(base: Setup, alpha: float, draft_cost: float, k_max: int = 16) -> tuple[int, float]:
    """(k, speedup) with the best simulated TPOT speedup for one client, k = 1..k_max."""
    rows = [(k, spec_vs_load(base, k, alpha, draft_cost, (1,))[0].speedup) for k in range(1, k_max + 1)]
    return max(rows, key=lambda x: x[1])


CAPACITY_CLIENTS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def capacity_at_tpot(base: Setup, tpot_slo_s: float, k: int = 4, alpha: float = 0.8, draft_cost: float = 0.05,
                     clients=CAPACITY_CLIENTS) -> dict:
    """Per instance, the most concurrent users (of ``clients``) whose mean TPOT stays within
    ``tpot_slo_s``, and the output tokens/s at that load, without and with speculative decoding:
    under a TPOT SLO what a GPU can sell is the throughput at the largest batch that still meets
    it. ``gain`` = speculative over plain tokens/s at their own limits (None: no load meets it)."""
    spec = spec_setup(base, k, alpha, draft_cost)
    out = {"tpot_slo_ms": tpot_slo_s * 1e3}
    for name, setup in (("plain", base), ("spec", spec)):
        ok = [(c, closed_loop_run(setup, c)) for c in clients]
        ok = [(c, r) for c, r in ok if r["tpot_s"] <= tpot_slo_s]
        c, r = max(ok, key=lambda x: x[0]) if ok else (0, {"tokens_per_s": 0.0})
        out[f"{name}_users"], out[f"{name}_tps"] = c, r["tokens_per_s"]
    out["gain"] = out["spec_tps"] / out["plain_tps"] if out["plain_tps"] else None
    return out


# --- Q8: structured output ---------------------------------------------------------------------

def mask_s(vocab: int, batch: int, ns_per_check: float, checked_fraction: float = 1.0, threads: int = 1) -> float:
    """CPU seconds per decode step to build the token masks of ``batch`` constrained requests: each
    checks ``checked_fraction`` of the vocabulary against its grammar state at ``ns_per_check`` ns
    per token, spread over ``threads`` cores."""
    return vocab * checked_fraction * batch * ns_per_check * 1e-9 / threads


def decode_step_s(setup: Setup, batch: int, context: int) -> float:
    """The roofline time of one decode step: ``batch`` requests with ``context`` tokens each."""
    return float(setup.step_time(batch, batch * context, 0, batch))


# --- Q9: observability and autoscaling -----------------------------------------------------------

def cold_starts(weight_bytes: float, init_s: float = 0.0) -> dict[str, float]:
    """Seconds before a new instance serves, per weight source (``sim.fleet.cold_start_s``)."""
    return {src: cold_start_s(weight_bytes, src, init_s) for src in ("local_nvme", "network_storage", "peer_gpu")}


def little_outstanding(rate: float, latency_s: float) -> float:
    """Little's law: requests in the system = arrival rate x time each spends in it."""
    return rate * latency_s


def instances_for(outstanding: float, target: float) -> int:
    """Instances an outstanding-requests autoscaler asks for: ceil(outstanding / target)."""
    return math.ceil(outstanding / target)


def warm_spares(ramp_qps_per_s: float, lead_s: float, per_instance_qps: float) -> int:
    """Instances the load grows by while a new one is decided and started (``lead_s`` = interval +
    cold start), rounded up: how many must already be warm for the SLO to hold through a ramp."""
    return math.ceil(ramp_qps_per_s * lead_s / per_instance_qps)


class Stabilized:
    """Outstanding-requests target with a scale-down window: scale up at once to ceil(outstanding
    / target) + ``spares``; scale down by one instance only after ``down_ticks`` ticks in a row
    that want fewer (Kubernetes' HPA keeps a 5-minute scale-down stabilisation window for the
    same reason). ``spares`` is how many warm instances to keep above what the load asks for."""

    name = "stabilized"

    def __init__(self, target: float, spares: int = 0, down_ticks: int = 4):
        if not target > 0:
            raise ValueError(f"target must be > 0 (outstanding requests per instance), got {target!r}")
        if spares < 0 or down_ticks < 1:
            raise ValueError(f"spares must be >= 0 and down_ticks >= 1, got {spares!r}, {down_ticks!r}")
        self.target, self.spares, self.down_ticks, self.low = target, spares, down_ticks, 0

    def desired(self, s) -> int:
        want = math.ceil(s.outstanding / self.target) + self.spares
        current = s.up + s.starting
        if want >= current:
            self.low = 0
            return want
        self.low += 1
        if self.low >= self.down_ticks:
            self.low = 0
            return current - 1
        return current


DAY_S = 1440.0                 # a "day" compressed 60x: 24 minutes
DAY_MEAN_QPS, DAY_PEAK_TO_TROUGH = 60.0, 4.0
DAY_INIT_S = 60.0              # engine start, compilation, CUDA-graph capture
WINDOW_S = 120.0


def day_load(seed: int = 0):
    """The compressed day: mean 60 req/s, peak 4x the trough, trough at t = 0 and the end, peak
    at 12 minutes; 2000 tokens in, 500 out (chapter 02's requests)."""
    return fleet_load.daily(DAY_MEAN_QPS, DAY_S, 2000, 500, peak_to_trough=DAY_PEAK_TO_TROUGH,
                            period_s=DAY_S, peak_at_s=DAY_S / 2, seed=seed)


@dataclass(frozen=True)
class DayRun:
    label: str
    slo_ok: float
    worst_window: float
    gpu_hours: float
    peak_instances: int
    windows: tuple          # (start_s, requests, attainment)
    timeline: tuple         # (time_s, up, starting)


def run_day(setup: Setup, *, weight_source: str, target: float, spares: int = 0, policy: str = "stabilized",
            start_instances: int = 2, max_instances: int = 16, interval_s: float = 15.0,
            init_s: float = DAY_INIT_S, label: str = "") -> DayRun:
    """The compressed day through an autoscaled fleet of ``setup`` (8 GPUs each): SLO attainment
    (2 s TTFT, 50 ms TPOT) overall and per 2-minute window, GPU-hours, instances over time.
    ``policy`` "stabilized" is ``Stabilized(target, spares)``; "outstanding" is the simulator's
    plain ``TargetOutstanding`` (no scale-down window)."""
    pol = Stabilized(target, spares) if policy == "stabilized" else policy
    a = Autoscaler(policy=pol, target=target, interval_s=interval_s, min_instances=1,
                   max_instances=max_instances, weight_source=weight_source, init_s=init_s)
    fleet = Fleet.of(setup, start_instances + spares, router="least_requests", gpus_per_instance=8,
                     autoscaler=a, log_routes=False)
    r = run_fleet(fleet, day_load())
    s = summarize_fleet(r, 2.0, 0.05, window_s=WINDOW_S)
    windows = tuple(s["slo_by_window"])
    return DayRun(label, s["slo_ok"], min(w[2] for w in windows), s["gpu_hours"], s["instances_peak"],
                  windows, tuple(r.timeline))


def instances_chart(runs: list[DayRun], load_fn=None) -> "plots.Chart":
    """Instances up over the day (left) and SLO attainment per window (right), one line per run."""
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    c = plots.Chart(2, width=900, height=260, title="compressed day (24 min): instances up / SLO attainment")
    for i, r in enumerate(runs):
        t = np.array([x[0] for x in r.timeline]) / 60
        up = np.array([x[1] for x in r.timeline])
        c.add(0, r.label, t, up, color=palette[i % 5], marker=False, step=True)
        w = np.array([x[0] for x in r.windows]) / 60
        c.add(1, r.label + " SLO", w, [x[2] for x in r.windows], color=palette[i % 5])
    c.axes(0, xlabel="minute of the compressed day", ylabel="instances up")
    c.axes(1, xlabel="window start (minute)", ylabel="fraction meeting both SLOs", ylim=(0, 1.02))
    return c


# --- Q10: multi-region deployment ---------------------------------------------------------------

def distribution_s(weight_bytes: float, instances_per_region: int, wan_gbs: float, peer_gbs: float = 50.0) -> float:
    """Seconds to put the weights on every instance of a region: one copy over the region's WAN
    link (regions in parallel), then a doubling fan-out between instances over RDMA (each round
    doubles the instances that hold a copy)."""
    rounds = math.ceil(math.log2(instances_per_region)) if instances_per_region > 1 else 0
    return weight_bytes / (wan_gbs * GB) + rounds * weight_bytes / (peer_gbs * GB)


def naive_distribution_s(weight_bytes: float, instances: int, origin_gbs: float) -> float:
    """Seconds when every instance pulls its own copy from one origin whose egress is ``origin_gbs``."""
    return instances * weight_bytes / (origin_gbs * GB)


def per_region_instances(total_qps: float, regions: int, per_instance_qps: float,
                         survive_region_loss: bool = True) -> int:
    """Instances each region needs so the whole load fits; with ``survive_region_loss`` it must fit
    on regions - 1 of them (every region carries total / (regions - 1) after a loss)."""
    share = total_qps / (regions - 1 if survive_region_loss else regions)
    return math.ceil(share / per_instance_qps)


def region_pd_pools(total_qps: float, regions: int = 3, input_len: int = 2000, output_len: int = 500,
                    survive_region_loss: bool = True, prefix_hit: float = 0.0, tpot_s: float = 0.05) -> dict:
    """Per region, chapter 03's Q1 deployment unit sized for its share of the load: prefill in whole
    EP32 instances, decode as one DP-attention + EP group in whole nodes (``course.ch03``'s roofline
    estimates, optimistic by about 2x against DeepSeek's published rates). With
    ``survive_region_loss`` each region is sized for total / (regions - 1)."""
    from course import ch03
    share = total_qps / (regions - 1 if survive_region_loss else regions)
    prefill = ch03.moe_prefill_gpus(share, input_len, prefix_hit=prefix_hit)
    decode = ch03.moe_decode_gpus(share, input_len, output_len, tpot_s=tpot_s)
    return {"region_qps": share, "prefill_gpus": prefill["gpus"], "prefill_instances": prefill["instances"],
            "decode_gpus": decode["gpus"], "gpus": prefill["gpus"] + decode["gpus"],
            "all_regions_gpus": regions * (prefill["gpus"] + decode["gpus"])}


REGION_QPS, REGION_DURATION_S, REGION_FAIL_AT_S = 180.0, 240.0, 80.0


def region_failure_run(setup: Setup, per_region: int, regions: int = 3, *, qps: float = REGION_QPS,
                       duration_s: float = REGION_DURATION_S, fail_at_s: float = REGION_FAIL_AT_S,
                       detect_s: float = 5.0, retries: int = 3, window_s: float = 20.0) -> dict:
    """A fleet of ``regions`` x ``per_region`` instances behind one global router; at ``fail_at_s``
    every instance of region 0 (ids 0..per_region-1) fails. Returns the fleet summary and, per
    window, SLO attainment (2 s TTFT, 50 ms TPOT). Cross-region latency is not modelled."""
    fail = Failures(at=tuple((fail_at_s, i) for i in range(per_region)), detect_s=detect_s, retries=retries)
    fleet = Fleet.of(setup, regions * per_region, router="least_requests", gpus_per_instance=8,
                     failures=fail, log_routes=False)
    r = run_fleet(fleet, workload.poisson(qps, int(qps * duration_s), 2000, 500, seed=0))
    s = summarize_fleet(r, 2.0, 0.05, window_s=window_s)
    after = [w for w in s["slo_by_window"] if w[0] >= fail_at_s + 20]
    s["after_failure_slo"] = sum(n * x for _, n, x in after) / sum(n for _, n, _ in after)
    return s


# --- Tables ------------------------------------------------------------------------------------

def table(header, rows) -> str:
    """A fixed-width text table (right-aligned numbers), as the notebook prints it."""
    cells = [[str(h) for h in header]] + [[str(x) for x in r] for r in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for j, row in enumerate(cells):
        lines.append("  ".join(_pad(x, widths[i], left=(i == 0)) for i, x in enumerate(row)))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _width(s: str) -> int:
    return sum(2 if "\u4e00" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" else 1 for ch in s)


def _pad(s: str, w: int, left: bool) -> str:
    gap = " " * (w - _width(s))
    return s + gap if left else gap + s


# --- The panel: speculative decoding as a service ----------------------------------------------

K_OPTIONS = tuple(range(1, 13))
ALPHA_OPTIONS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DRAFT_COST_OPTIONS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3)
PANEL_DEFAULTS = dict(k=4, alpha=0.8, draft_cost=0.05, clients=16)


def spec_rows(base: Setup, k: int, alpha: float, draft_cost: float, clients: int) -> list[tuple[str, str]]:
    """The panel's table: the closed form, the best k, and the simulated run at ``clients``."""
    p = spec_vs_load(base, k, alpha, draft_cost, (clients,))[0]
    best_k, best = best_draft_length(alpha, draft_cost)
    return [
        ("每步期望产出 token（公式）", f"{tokens_per_step(k, alpha):.2f}"),
        ("低负载加速比（公式）", f"{spec_speedup(k, alpha, draft_cost):.2f}x"),
        ("这个接受率下最好的 k（公式）", f"k = {best_k}，{best:.2f}x"),
        (f"{clients} 个并发用户：TPOT 不开 / 开", f"{p.tpot_plain_s * 1e3:.1f} ms / {p.tpot_spec_s * 1e3:.1f} ms"),
        (f"{clients} 个并发用户：TPOT 加速比（模拟）", f"{p.speedup:.2f}x"),
        (f"{clients} 个并发用户：总吞吐 不开 / 开", f"{p.tps_plain:,.0f} / {p.tps_spec:,.0f} token/s"),
    ]


def spec_chart(base: Setup, k: int, alpha: float, draft_cost: float, clients: int) -> "plots.Chart":
    """Left: simulated TPOT speedup against concurrent users, the closed form and 1x. Right: the
    instance's output tokens per second with and without drafts."""
    pts = spec_vs_load(base, k, alpha, draft_cost)
    x = [p.clients for p in pts]
    c = plots.Chart(2, title=f"k={k}, alpha={alpha:g}, draft cost={draft_cost:g}")
    c.add(0, "speedup (simulated)", x, [p.speedup for p in pts], color="#1f77b4")
    c.hline(0, "closed form (low load)", spec_speedup(k, alpha, draft_cost), color="#2ca02c")
    c.hline(0, "no gain (1x)", 1.0, color="#d62728")
    c.vline(0, "chosen load", clients, color="#7f7f7f")
    c.axes(0, logx=True, xlabel="concurrent users (log scale)", ylabel="TPOT speedup")
    c.add(1, "tokens/s plain", x, [p.tps_plain for p in pts], color="#ff7f0e")
    c.add(1, "tokens/s speculative", x, [p.tps_spec for p in pts], color="#1f77b4")
    c.axes(1, logx=True, logy=True, xlabel="concurrent users (log scale)", ylabel="output tokens/s")
    return c


class SpecPanel:
    """Sliders for k, acceptance rate, draft cost and concurrent users over chapter 02's instance;
    ``update()`` recomputes the table (``rows``) and the chart (``figure``). No kernel needed:
    tests set the sliders' values and read ``rows`` / ``figure``."""

    def __init__(self, base: Setup, **values):
        import ipywidgets as w

        v = {**PANEL_DEFAULTS, **values}
        style, layout = {"description_width": "150px"}, w.Layout(width="520px")
        self.base = base
        self.controls = {
            "k": w.SelectionSlider(options=K_OPTIONS, value=v["k"], description="草稿长度 k",
                                   continuous_update=False, style=style, layout=layout),
            "alpha": w.SelectionSlider(options=ALPHA_OPTIONS, value=v["alpha"], description="接受率 alpha",
                                       continuous_update=False, style=style, layout=layout),
            "draft_cost": w.SelectionSlider(options=DRAFT_COST_OPTIONS, value=v["draft_cost"],
                                            description="草稿一次的相对开销", continuous_update=False,
                                            style=style, layout=layout),
            "clients": w.SelectionSlider(options=CLIENTS, value=v["clients"], description="并发用户数",
                                         continuous_update=False, style=style, layout=layout),
        }
        self.table = w.HTML()
        self.chart = w.HTML()
        self.widget = w.VBox(list(self.controls.values()) + [self.table, self.chart])
        self.rows = self.figure = None
        for c in self.controls.values():
            c.observe(lambda _c: self.update(), names="value")
        self.update()

    def values(self) -> dict:
        return {name: c.value for name, c in self.controls.items()}

    def update(self) -> None:
        start = time.perf_counter()
        v = self.values()
        self.rows = spec_rows(self.base, **v)
        self.table.value = rows_html(self.rows)
        self.figure = spec_chart(self.base, **v)
        self.chart.value = self.figure.svg()
        self.last_update_s = time.perf_counter() - start

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def spec_panel(base: Setup | None = None, **values) -> SpecPanel:
    """The chapter's panel over chapter 02's instance (70B FP8 on 8 x H100) unless ``base`` given."""
    if base is None:
        from course.panel import chapter_setup
        base = chapter_setup()
    return SpecPanel(base, **values)
