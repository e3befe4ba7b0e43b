"""Chapter 10 (long context): what a long prompt costs in KV memory and prefill time, and whether
the handbook's separate pool for prompts above 32K pays, simulated.

- KV bytes per token from the model shapes of ``sim.presets`` (GQA, MLA, and sliding-window layers
  as arithmetic on the same shapes), and how many requests of a length fit one instance;
- prefill time of one prompt against its length with the calibrated step model: the chunks' step
  times with their attention pairs (``Setup.step_time``, ``sim.setup.attention_pairs``), split
  into the linear term (matmuls) and the quadratic one (attention);
- fleets of the chapter's instance (Llama-3-70B, FP8, TP-8 on H100): one shared pool against a
  main pool plus a long pool behind ``by_length``, on the Mooncake conversation trace and on a
  synthetic mix, with p99 TTFT and ITL per class of request;
- context parallelism (ring attention, LSE merge) and KV eviction (StreamingLLM, H2O) as arithmetic.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim import presets, trace, workload
from sim.fleet import ROUTERS, Fleet, Pool, run_fleet
from sim.metrics import percentile
from sim.setup import attention_pairs
from sim.workload import Workload
from course import memo
from course.kit import DropdownPanel, text_table

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
MOONCAKE = DATA / "mooncake_conversation_trace.jsonl.gz"
LONG = 32768                      # the handbook's line: prompts above 32K go to the long pool
MODELS = {"llama-3.1-405b": "GQA, 8 KV heads", "llama-3-70b": "GQA, 8 KV heads",
          "qwen2.5-72b": "GQA, 8 KV heads", "deepseek-v3": "MLA, latent 512 + RoPE 64"}
KV_GPU, KV_TP = "h200", 8         # the KV and prefill tables: one 8 x H200 node, FP8 weights and KV
GPUS_PER_INSTANCE = 8
WINDOW_S = (600.0, 300.0)         # the Mooncake window replayed: from minute 10, five minutes
SPEEDS = (0.5, 0.75, 1.0)         # replay speeds of that window
SLO_TTFT_SHORT = 2.0              # the fleets' TTFT SLO for short prompts (s)


table = text_table


# --- KV bytes per token ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def node(model: str, gpu: str = KV_GPU, tp: int = KV_TP):
    """The model on one node, FP8 weights and KV, calibrated."""
    return presets.instance(model, gpu, tp=tp, weight_dtype="fp8", kv_dtype="fp8")


def kv_bytes_per_token(model: str, kv_dtype: str = "fp8") -> int:
    """One copy of one token's KV over all layers (GQA: K and V of every KV head; MLA: the latent
    plus the shared RoPE key)."""
    return presets.kv_bytes_per_token(presets.model(model), 1, kv_dtype)


def kv_bytes_per_gpu(model: str, tp: int = KV_TP, kv_dtype: str = "fp8") -> float:
    """One token's KV on each GPU of a TP group: GQA's heads are split, MLA's latent is copied."""
    return presets.kv_bytes_per_token(presets.model(model), tp, kv_dtype) / tp


def request_kv_bytes(model: str, context: int, *, window: int | None = None, local_share: float = 0.0,
                     kv_dtype: str = "fp8") -> float:
    """One request's KV at ``context`` tokens (one copy). With ``window``, a share ``local_share``
    of the layers is sliding-window attention and keeps only the last ``window`` tokens."""
    _check_context(context)
    if not 0 <= local_share <= 1:
        raise ValueError(f"local_share must be in [0, 1], got {local_share!r}")
    if window is not None and window < 1:
        raise ValueError(f"window must be a whole number >= 1, got {window!r}")
    per = kv_bytes_per_token(model, kv_dtype)
    if window is None:
        return float(per * context)
    return per * ((1 - local_share) * context + local_share * min(context, window))


def _check_context(context) -> None:
    if isinstance(context, bool) or not isinstance(context, (int, np.integer)) or context < 1:
        raise ValueError(f"context must be a whole number of tokens >= 1, got {context!r}")


def concurrency(model: str, context: int, **kv) -> int:
    """Requests of ``context`` tokens whose KV fits the node's free KV memory at once."""
    s = node(model)
    free = s.kv_capacity_tokens * s.kv_bytes_per_token          # bytes over the whole node
    copies = s.kv_bytes_per_token / kv_bytes_per_token(model)   # MLA: one latent copy per GPU
    return int(free // (request_kv_bytes(model, context, **kv) * copies))


# --- prefill time against length -------------------------------------------------------------------

def prefill_steps(setup, length: int) -> list[tuple[int, int, int]]:
    """(tokens, context, pairs) of each chunk of one prompt alone on an instance: chunks of the
    step budget, each over the KV already computed, with its causal attention pairs."""
    if length < 1:
        raise ValueError(f"length must be a whole number >= 1, got {length!r}")
    out, done, budget = [], 0, setup.max_num_batched_tokens
    while done < length:
        chunk = min(budget, length - done)
        out.append((chunk, done, attention_pairs(done, chunk)))
        done += chunk
    return out


def prefill_s(setup, length: int, *, attention: bool = True) -> float:
    """Seconds to prefill one prompt of ``length`` tokens alone (the first token's time); without
    ``attention`` the pairs are left out (the linear part)."""
    return float(sum(setup.step_time(t, c, p if attention else 0) for t, c, p in prefill_steps(setup, length)))


def prefill_terms(setup, length: int) -> tuple[float, float]:
    """(matmul FLOP seconds, attention FLOP seconds) of the whole prompt."""
    steps = prefill_steps(setup, length)
    linear = sum(2 * setup.params * t for t, _, _ in steps) / (setup.peak_flops * setup.mfu)
    attn = sum(setup.attn_flops_per_pair * p for _, _, p in steps) / (setup.peak_flops * setup.attn_mfu)
    return linear, attn


def crossover_tokens(setup) -> float:
    """Length at which causal attention's FLOP time equals the matmuls': attention pairs ~ L^2 / 2,
    so L = 4 params attn_mfu / (attn_flops_per_pair mfu)."""
    return 4 * setup.params * setup.attn_mfu / (setup.attn_flops_per_pair * setup.mfu)


LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def prefill_figure(models=("llama-3.1-405b", "llama-3-70b", "deepseek-v3"), lengths=LENGTHS):
    """Prefill seconds against prompt length (log-log), per model on one 8 x H200 node: with
    attention (solid, labelled by model) and matmuls only (dashed, "<model> linear")."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter
    fig = Figure(figsize=(7, 3.4))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.9)
    ax = fig.subplots()
    for k, m in enumerate(models):
        s, color = node(m), f"C{k}"
        ax.plot(lengths, [prefill_s(s, n) for n in lengths], "o-", color=color, label=m)
        ax.plot(lengths, [prefill_s(s, n, attention=False) for n in lengths], "--", color=color,
                label=f"{m} linear")
        x = crossover_tokens(s)
        if lengths[0] <= x <= lengths[-1]:
            ax.axvline(x, color=color, ls=":", alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1024:g}K"))
    ax.set_yscale("log")
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("prefill time, one prompt (s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"prefill on 8 x {presets.gpu(KV_GPU).name}, FP8 (dotted: attention = matmuls)")
    return fig


# --- fleets: one shared pool against a long pool ----------------------------------------------------

def setup():
    """The chapter's instance (chapters 02 and 07): Llama-3-70B, FP8 weights and KV, 8 x H100."""
    return presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")


@lru_cache(maxsize=None)
def mooncake() -> trace.Trace:
    return trace.mooncake(MOONCAKE)


def trace_stats() -> dict:
    t = mooncake()
    inp = np.asarray(t.input_len, float)
    return {"requests": len(t), "minutes": t.duration_s / 60, "rate": len(t) / t.duration_s,
            "p50": float(np.median(inp)), "p90": float(np.percentile(inp, 90)), "p99": float(np.percentile(inp, 99)),
            "max": int(inp.max()), "long_share": float(np.mean(inp > LONG)),
            "long_token_share": float(inp[inp > LONG].sum() / inp.sum())}


@lru_cache(maxsize=None)
def mooncake_load(speed: float = 1.0) -> Workload:
    """Five minutes of the Mooncake trace (from minute 10) replayed ``speed`` times as fast."""
    return workload.trace(mooncake(), start_s=WINDOW_S[0], duration_s=WINDOW_S[1], speed=speed)


@lru_cache(maxsize=None)
def mix(long_share: float, long_len: int, rate: float = 4.0, seconds: float = 180.0, seed: int = 0) -> Workload:
    """A synthetic mix: Poisson arrivals at ``rate``; ``long_share`` of the prompts (rounded to whole
    requests) uniform in [0.75, 1.25] x ``long_len``, the rest lognormal around 4,000 tokens (capped
    at 32K); answers lognormal around 300 tokens."""
    if not 0 <= long_share <= 1:
        raise ValueError(f"long_share must be in [0, 1], got {long_share!r}")
    if not LONG < 0.75 * long_len and 1.25 * long_len <= 120_000:
        raise ValueError(f"long_len must be in ({LONG / 0.75:.0f}, 96000] so that every long prompt is above "
                         f"32K and within 120K, got {long_len!r}")
    rng = np.random.default_rng(seed)
    n = max(1, int(rate * seconds))
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    arrival -= arrival[0]
    short = np.minimum(rng.lognormal(np.log(4000) - 0.5, 1.0, n), LONG - 1).astype(int) + 1   # 1 .. 32K
    longs = rng.integers(int(0.75 * long_len), int(1.25 * long_len) + 1, n)
    is_long = np.zeros(n, bool)                  # exactly the share asked, at random places
    is_long[rng.choice(n, round(long_share * n), replace=False)] = True
    inp = np.where(is_long, longs, short)
    out = np.clip(rng.lognormal(np.log(300) - 0.5, 1.0, n), 1, 4000).astype(int)
    return Workload("long-mix", tuple(arrival.tolist()), tuple(int(x) for x in inp), tuple(int(x) for x in out))


def fleet(instances: int, long_instances: int = 0) -> Fleet:
    """``instances`` of the chapter's instance: one shared pool (``long_instances`` 0), or
    ``instances - long_instances`` for prompts up to 32K plus a long pool behind ``by_length``.
    Inside each pool, least outstanding requests."""
    s = setup()
    if not 0 <= long_instances < instances:
        raise ValueError(f"long_instances must be in [0, instances - 1] = [0, {instances - 1}], got {long_instances!r}")
    if not long_instances:
        return Fleet.of(s, instances, router="least_requests", gpus_per_instance=GPUS_PER_INSTANCE)
    return Fleet.of(s, instances - long_instances, router=ROUTERS["by_length"](threshold=LONG),
                    gpus_per_instance=GPUS_PER_INSTANCE,
                    pools={"long": Pool(s, long_instances, GPUS_PER_INSTANCE)})


def itl_gaps(result, mask) -> tuple[np.ndarray, np.ndarray]:
    """(step durations, requests of ``mask`` that got a token from each): every decode gap of the
    requests selected. A running request gets one token per step of its instance, so its tokens 2..n
    come from the ``output_len - 1`` steps ending with the one it finished in."""
    gaps, weights = [], []
    for i, res in enumerate(result.instance_results):
        mine = np.flatnonzero((result.instance == i) & mask & ~np.isnan(result.finish) & (result.output_len > 1))
        if not len(mine):
            continue
        steps = res.steps
        last = np.searchsorted(steps.start, result.finish[mine], side="left") - 1
        first = last - (result.output_len[mine] - 2)
        count = np.zeros(len(steps.start) + 1)
        np.add.at(count, first, 1)
        np.add.at(count, last + 1, -1)
        count = np.cumsum(count)[:-1]
        keep = count > 0
        gaps.append(steps.duration[keep])
        weights.append(count[keep])
    if not gaps:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(gaps), np.concatenate(weights)


@dataclass(frozen=True)
class ClassStats:
    requests: int
    ttft_p99_s: float
    itl_p99_s: float


@dataclass(frozen=True)
class Run:
    instances: int
    long_instances: int
    gpus: int
    short: ClassStats             # prompts up to 32K
    long: ClassStats              # prompts above 32K
    short_ttft_met: float         # share of short prompts with TTFT <= SLO_TTFT_SHORT


def _class(result, mask) -> ClassStats:
    if not mask.any():
        return ClassStats(0, float("nan"), float("nan"))
    gaps, w = itl_gaps(result, mask)
    return ClassStats(int(mask.sum()), float(np.percentile(result.ttft[mask], 99)),
                      percentile(gaps, 99, weights=w) if len(gaps) else float("nan"))


def evaluate(f: Fleet, w: Workload) -> Run:
    r = run_fleet(f, w)
    long = np.asarray(w.input_len) > LONG
    pools = dict(f.pool_items)
    return Run(f.instances, pools["long"].instances if "long" in pools else 0, f.gpus, _class(r, ~long),
               _class(r, long), float(np.mean(r.ttft[~long] <= SLO_TTFT_SHORT)))


@lru_cache(maxsize=256)
def run_mooncake(instances: int, long_instances: int, speed: float = 1.0) -> Run:
    return evaluate(fleet(instances, long_instances), mooncake_load(speed))


@lru_cache(maxsize=512)
@memo.shipped("ch10.run_mix", "course/ch10.py")
def run_mix(instances: int, long_instances: int, long_share: float, long_len: int) -> Run:
    return evaluate(fleet(instances, long_instances), mix(long_share, long_len))


def ttft_figure(layouts=((4, 0), (4, 1), (6, 0))):
    """Share of short prompts (up to 32K) whose first token came within t, against t, on the
    Mooncake window: one line per fleet, labelled by ``layout_name``."""
    from matplotlib.figure import Figure
    w = mooncake_load()
    short = np.asarray(w.input_len) <= LONG
    fig = Figure(figsize=(7, 3.2))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.9)
    ax = fig.subplots()
    for n, k in layouts:
        ttft = np.sort(run_fleet(fleet(n, k), w).ttft[short])
        ax.plot(ttft, np.arange(1, len(ttft) + 1) / len(ttft),
                label=f"{layout_name(n, k)} ({n * GPUS_PER_INSTANCE} GPUs)")
    ax.axvline(SLO_TTFT_SHORT, color="#888", ls="--", label=f"{SLO_TTFT_SHORT:g} s")
    ax.set_xscale("log")
    ax.set_xlabel("TTFT of prompts up to 32K (s)")
    ax.set_ylabel("share of requests")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Mooncake conversation trace, minutes 10-15")
    return fig


def layout_name(instances: int, long_instances: int) -> str:
    return f"shared {instances}" if not long_instances else f"{instances - long_instances} + {long_instances} long"


def run_row(r: Run) -> tuple:
    s = lambda x: "-" if np.isnan(x) else f"{x:.2f} s"          # noqa: E731
    ms = lambda x: "-" if np.isnan(x) else f"{x * 1e3:.0f} ms"  # noqa: E731
    return (layout_name(r.instances, r.long_instances), r.gpus, s(r.short.ttft_p99_s), ms(r.short.itl_p99_s),
            f"{r.short_ttft_met:.1%}", s(r.long.ttft_p99_s), ms(r.long.itl_p99_s))


RUN_HEAD = ["fleet", "GPUs", "short p99 TTFT", "short p99 ITL", f"short TTFT<={SLO_TTFT_SHORT:g}s",
            "long p99 TTFT", "long p99 ITL"]


# --- context parallelism and KV eviction, as arithmetic ---------------------------------------------

def partial_attention(q, k, v):
    """Softmax attention of queries ``q`` over keys ``k`` alone: (output, log-sum-exp per query)."""
    s = q @ k.T / np.sqrt(q.shape[1])
    m = s.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(axis=1, keepdims=True)))[:, 0]
    return np.exp(s - lse[:, None]) @ v, lse


def lse_merge(outs, lses):
    """Exact attention over all keys from per-block outputs: weights exp(lse_i - lse)."""
    lses = np.stack(lses)
    total = np.logaddexp.reduce(lses, axis=0)
    return sum(np.exp(l - total)[:, None] * o for o, l in zip(outs, lses))


def lse_merge_error(queries: int = 4, keys: int = 1024, blocks: int = 4, dim: int = 64, seed: int = 0) -> float:
    """Largest absolute difference between attention over all keys and the LSE merge of ``blocks``."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, dim)) for n in (queries, keys, keys))
    full, _ = partial_attention(q, k, v)
    parts = [partial_attention(q, kb, vb) for kb, vb in zip(np.array_split(k, blocks), np.array_split(v, blocks))]
    return float(np.abs(lse_merge([o for o, _ in parts], [l for _, l in parts]) - full).max())


@dataclass(frozen=True)
class CPEstimate:
    cp: int
    compute_s: float              # per rank: the matmuls and attention of its share
    hop_s: float                  # one ring hop: a block of L / cp tokens' KV over the link
    hop_compute_s: float          # the attention of one (query block, KV block) pair, which hides it
    exposed_s: float              # ring time not hidden under compute
    total_s: float


def cp_prefill(model: str, length: int, cp: int, *, gpu: str = "h100-sxm", link_gbs: float = 400.0) -> CPEstimate:
    """Prefill of one prompt with context parallelism over ``cp`` nodes of TP-8 (pass-KV ring
    attention, load-balanced causal sharding): each rank does 1 / cp of the matmuls and of the
    attention pairs; the KV blocks go round the ring in cp - 1 hops over ``link_gbs`` GB/s per node,
    each hidden under one block pair's attention when it is long enough."""
    if cp < 1:
        raise ValueError(f"cp must be a whole number >= 1, got {cp!r}")
    s = node(model, gpu)
    linear, attn = prefill_terms(s, length)
    compute = (linear + attn) / cp
    hop = length / cp * s.kv_bytes_per_token / (link_gbs * 1e9)
    hop_compute = attn / cp / cp
    exposed = (cp - 1) * max(0.0, hop - hop_compute)
    return CPEstimate(cp, compute, hop, hop_compute, exposed, compute + exposed)


def eviction_kv_bytes(model: str, context: int, policy: str, *, sink: int = 4, window: int = 4092,
                      budget: float = 0.2) -> float:
    """One request's KV at ``context`` tokens: "full", "streaming" (``sink`` + ``window`` tokens kept)
    or "h2o" (a share ``budget`` of the tokens kept: heavy hitters plus recent ones)."""
    _check_context(context)
    per = kv_bytes_per_token(model)
    if policy == "full":
        return float(per * context)
    if policy == "streaming":
        return float(per * min(context, sink + window))
    if policy == "h2o":
        return float(per * np.ceil(budget * context))
    raise ValueError(f"policy must be 'full', 'streaming' or 'h2o', got {policy!r}")


def eviction_concurrency(model: str, context: int, policy: str, **kv) -> int:
    s = node(model)
    free = s.kv_capacity_tokens * s.kv_bytes_per_token
    copies = s.kv_bytes_per_token / kv_bytes_per_token(model)
    return int(free // (eviction_kv_bytes(model, context, policy, **kv) * copies))


# --- the panel ------------------------------------------------------------------------------------

SHARES = (0.02, 0.05, 0.1)
LONG_LENS = (48_000, 64_000, 96_000)
INSTANCES = (4, 5, 6)


@dataclass(frozen=True)
class PanelAnswer:
    run: Run
    shared: Run                   # the same GPUs as one pool


def panel_answer(long_share: float, long_len: int, instances: int, long_instances: int) -> PanelAnswer:
    return PanelAnswer(run_mix(instances, long_instances, long_share, long_len),
                       run_mix(instances, 0, long_share, long_len))


class LongPanel(DropdownPanel):
    """Share of long prompts x their length x fleet size x long-pool size -> p99 TTFT / ITL of short
    and long prompts, against one shared pool of the same GPUs. Each combination's two fleet runs
    come from the shipped table (``course.memo``), or run once (about a second each) and are cached."""

    width, per_row, has_chart = "230px", 2, False

    def controls_spec(self) -> dict:
        return {
            "long_share": ("长请求占比", [(f"{x:.0%}", x) for x in SHARES], 0.05),
            "long_len": ("长提示词", [(f"{x // 1000}K", x) for x in LONG_LENS], 64_000),
            "instances": ("实例数", [(f"{n}（{n * GPUS_PER_INSTANCE} 卡）", n) for n in INSTANCES], 4),
            "long_instances": ("长池实例", [("0（共享池）", 0), ("1", 1), ("2", 2)], 1),
        }

    def update(self) -> PanelAnswer:
        c = self.choice()
        a = self.answer = panel_answer(c["long_share"], c["long_len"], c["instances"], c["long_instances"])
        rows = [run_row(a.run)] + ([run_row(a.shared)] if c["long_instances"] else [])
        head = ["部署", "GPU", "短请求 P99 TTFT", "短请求 P99 ITL", f"短请求 TTFT ≤ {SLO_TTFT_SHORT:g}s",
                "长请求 P99 TTFT", "长请求 P99 ITL"]
        cell = lambda x, tag="td": f"<{tag} style='padding:2px 10px'>{html.escape(str(x))}</{tag}>"  # noqa: E731
        self.table.value = ("<table><tr>" + "".join(cell(h, "th") for h in head) + "</tr>"
                            + "".join("<tr>" + "".join(cell(x) for x in r) + "</tr>" for r in rows) + "</table>")
        return a


def long_panel() -> LongPanel:
    return LongPanel()
