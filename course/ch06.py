"""Chapter 06 (prefix caching and KV tiers): what a prefix cache stores and finds, how much it finds
on Mooncake's conversation trace, what a host tier adds, and what routing does to it.

- two toy caches on token lists, side by side: hashed blocks (vLLM: one entry per full block, keyed
  by a chain hash) and a radix tree (SGLang: edges of tokens), with their lookup walks and eviction;
- an order-only LRU replay of the trace's 512-token blocks (what the Mooncake paper's Figure 9
  plots: hit rate against capacity, no timing), for the ceiling and the shape of the curve;
- the chapter's instance (Llama-3-70B, FP8 weights and KV, 8 x H100, calibrated preset) with paged
  KV and ``sim.kv.PrefixCache``: hit rate and TTFT against the GPU cache size and a host tier, on a
  quarter of the trace's conversations; read-back against recompute as arithmetic and simulated;
- fleets of four such instances on the whole first half hour of the trace behind
  ``least_requests``, ``session_affinity`` and ``prefix_aware``;
- the panel, answering from the shipped table of its 54 fleet runs (``course.memo``: each run
  takes seconds; ``python -m course.memo build 06`` rebuilds it, and a stale table answers live).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from course import memo, plots
from course.kit import DropdownPanel, rows_html, text_table
from sim import presets, summarize, trace, workload
from sim.fleet import Fleet, run_fleet, summarize_fleet
from sim.kv import Paged, PrefixCache
from sim.metrics import memory_stats

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
MOONCAKE = DATA / "mooncake_conversation_trace.jsonl.gz"
GB = 1e9

WINDOW_S = 1800.0                 # the first half hour of the trace
SHARE = 4                         # the one-instance runs keep one conversation in SHARE
INSTANCES = 4                     # the fleet: four 8 x H100 instances, 32 GPUs
GPUS_PER_INSTANCE = 8
HOST_LINK_GBS = 200.0             # host DRAM to the 8 GPUs: 8 x 25 GB/s of PCIe (chapter 03, Q2)
HOST_TOKENS = 6_000_000           # about 1 TB of DRAM at 160 KiB per token (FP8 KV)
TTFT_SLO_S, TPOT_SLO_S = 2.0, 0.05

table = text_table


# --- two ways to store prefixes, on token lists ------------------------------------------------

class HashedBlocks:
    """vLLM's layout, in miniature: one entry per *full* block of ``block_size`` tokens, keyed by a
    chain hash (the parent block's hash and this block's tokens), in one LRU of at most
    ``capacity_blocks`` entries. A partial last block is never stored."""

    def __init__(self, block_size: int, capacity_blocks: int):
        if block_size < 1 or capacity_blocks < 1:
            raise ValueError(f"block_size and capacity_blocks must be >= 1, got {block_size}, {capacity_blocks}")
        self.block_size, self.capacity = block_size, capacity_blocks
        self.blocks: OrderedDict = OrderedDict()        # chain hash -> the block's tokens, oldest first

    def chain(self, tokens) -> list[int]:
        """The chain hash of every full block of ``tokens``."""
        out, parent, b = [], 0, self.block_size
        for j in range(len(tokens) // b):
            parent = hash((parent, tuple(tokens[j * b:(j + 1) * b])))
            out.append(parent)
        return out

    def lookup(self, tokens) -> tuple[int, int]:
        """(tokens matched, dictionary probes): hash block by block, stop at the first miss."""
        probes = 0
        for j, h in enumerate(self.chain(tokens)):
            probes += 1
            if h not in self.blocks:
                return j * self.block_size, probes
            self.blocks.move_to_end(h)
        return len(tokens) // self.block_size * self.block_size, probes

    def insert(self, tokens) -> int:
        """Store every full block (tail first, so the shared head is the most recent); returns the
        tokens evicted to make room (whole blocks, least recently used first)."""
        b = self.block_size
        hashes = self.chain(tokens)
        for j in reversed(range(len(hashes))):
            self.blocks[hashes[j]] = tuple(tokens[j * b:(j + 1) * b])
            self.blocks.move_to_end(hashes[j])
        evicted = 0
        while len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)
            evicted += b
        return evicted

    @property
    def stored_tokens(self) -> int:
        return len(self.blocks) * self.block_size


class _Node:
    __slots__ = ("edge", "children", "parent", "used")

    def __init__(self, edge: tuple, parent):
        self.edge, self.children, self.parent, self.used = edge, {}, parent, 0


class RadixTree:
    """SGLang's layout, in miniature: a tree whose edges are runs of tokens (children keyed by their
    first token), every token stored once, at most ``capacity_tokens`` tokens. Eviction removes
    whole leaves, least recently used first."""

    def __init__(self, capacity_tokens: int):
        if capacity_tokens < 1:
            raise ValueError(f"capacity_tokens must be >= 1, got {capacity_tokens}")
        self.capacity = capacity_tokens
        self.root = _Node((), None)
        self.clock = 0
        self.stored_tokens = 0

    def _walk(self, tokens):
        """(matched tokens, nodes visited, the last node, tokens matched into its edge)."""
        node, i, visited = self.root, 0, 0
        self.clock += 1
        while i < len(tokens):
            child = node.children.get(tokens[i])
            if child is None:
                break
            visited += 1
            k = 0
            while k < len(child.edge) and i + k < len(tokens) and child.edge[k] == tokens[i + k]:
                k += 1
            child.used = self.clock
            i += k
            if k < len(child.edge):
                return i, visited, child, k
            node = child
        return i, visited, node, len(node.edge)

    def lookup(self, tokens) -> tuple[int, int]:
        """(tokens matched, nodes visited): follow edges token by token from the root."""
        matched, visited, _, _ = self._walk(tokens)
        return matched, visited

    def insert(self, tokens) -> int:
        """Store ``tokens`` (splitting an edge where the new sequence leaves it); returns the tokens
        evicted to make room (whole leaves)."""
        tokens = tuple(tokens)
        matched, _, node, k = self._walk(tokens)
        if k < len(node.edge):                          # split the edge at the divergence
            head = _Node(node.edge[:k], node.parent)
            head.used = node.used
            node.parent.children[node.edge[0]] = head
            node.edge, node.parent = node.edge[k:], head
            head.children[node.edge[0]] = node
            node = head
        if matched < len(tokens):
            leaf = _Node(tokens[matched:], node)
            leaf.used = self.clock
            node.children[tokens[matched]] = leaf
            self.stored_tokens += len(leaf.edge)
        return self._evict()

    def _evict(self) -> int:
        evicted = 0
        while self.stored_tokens > self.capacity:
            leaves = [n for n in self._nodes() if not n.children and n is not self.root]
            victim = min(leaves, key=lambda n: n.used)
            del victim.parent.children[victim.edge[0]]
            self.stored_tokens -= len(victim.edge)
            evicted += len(victim.edge)
        return evicted

    def _nodes(self):
        stack = [self.root]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children.values())

    @property
    def nodes(self) -> int:
        return sum(1 for _ in self._nodes()) - 1


def toy_requests() -> list[tuple[str, list[int]]]:
    """A 40-token system prompt, a chat of two turns (the second repeats the first and its answer)
    and a second user's first turn: token ids are plain ints."""
    system = list(range(1000, 1040))
    a1 = system + list(range(2000, 2013))
    a2 = a1 + list(range(3000, 3010)) + list(range(2100, 2107))
    b1 = system + list(range(4000, 4009))
    return [("A turn 1", a1), ("A turn 2", a2), ("B turn 1", b1), ("A turn 2 again", a2)]


@dataclass(frozen=True)
class ToyRow:
    request: str
    tokens: int
    hashed_hit: int
    hashed_probes: int
    radix_hit: int
    radix_nodes: int
    hashed_stored: int
    radix_stored: int


def toy_compare(block_size: int = 16, capacity_tokens: int = 1000) -> list[ToyRow]:
    """Look each toy request up in both caches, then store it."""
    hashed, radix = HashedBlocks(block_size, capacity_tokens // block_size), RadixTree(capacity_tokens)
    rows = []
    for name, tokens in toy_requests():
        hh, hp = hashed.lookup(tokens)
        rh, rn = radix.lookup(tokens)
        hashed.insert(tokens)
        radix.insert(tokens)
        rows.append(ToyRow(name, len(tokens), hh, hp, rh, rn, hashed.stored_tokens, radix.stored_tokens))
    return rows


def toy_eviction(block_size: int = 16) -> dict:
    """Both caches sized to hold the toy chat A and no more, then B arrives: what each evicts."""
    reqs = dict(toy_requests())
    a2, b1 = reqs["A turn 2"], reqs["B turn 1"]
    hashed = HashedBlocks(block_size, len(a2) // block_size)
    radix = RadixTree(len(a2))
    for t in (reqs["A turn 1"], a2):
        hashed.insert(t)
        radix.insert(t)
    out = {"hashed_evicted": hashed.insert(b1), "radix_evicted": radix.insert(b1)}
    out["hashed_a2_hit"] = hashed.lookup(a2)[0]
    out["radix_a2_hit"] = radix.lookup(a2)[0]
    return out


# --- the trace ------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def mooncake() -> trace.Trace:
    return trace.mooncake(MOONCAKE)


def session_of(hash_ids, index: int) -> int:
    """A request's conversation: the id of its second 512-token block. Every request of the trace
    starts with the same block (id 0, a shared system prompt); the ids are chain hashes, so two
    requests can share anything beyond that block only if their second ids are equal."""
    return int(hash_ids[1]) if len(hash_ids) > 1 else -1 - index


def conversations(t: trace.Trace, share: int = 1, part: int = 0) -> trace.Trace:
    """The requests of every ``share``-th conversation (session id mod ``share`` == ``part``), with
    their own arrival times: a deterministic subset that keeps each conversation whole."""
    if share < 1 or not 0 <= part < share:
        raise ValueError(f"share must be >= 1 and part in [0, share), got {share!r}, {part!r}")
    keep = [i for i, h in enumerate(t.hash_ids) if session_of(h, i) % share == part]
    pick = lambda xs: tuple(xs[i] for i in keep)          # noqa: E731
    return trace.Trace(f"{t.name} 1/{share}", pick(t.arrival), pick(t.input_len), pick(t.output_len),
                       pick(t.hash_ids), t.block_tokens)


@lru_cache(maxsize=None)
def half_hour(share: int = 1) -> trace.Trace:
    """The first 30 minutes of the trace (every conversation, or one in ``share``)."""
    t = mooncake().window(0.0, WINDOW_S)
    return t if share == 1 else conversations(t, share)


def sessions(t: trace.Trace) -> list[int]:
    return [session_of(h, i) for i, h in enumerate(t.hash_ids)]


def trace_stats(t: trace.Trace | None = None) -> dict:
    t = t or mooncake()
    inp = np.asarray(t.input_len)
    s = sessions(t)
    return {"requests": len(t), "minutes": t.duration_s / 60, "rate": len(t) / t.duration_s,
            "mean_input": float(inp.mean()), "mean_output": float(np.mean(t.output_len)),
            "blocks": sum(len(h) for h in t.hash_ids), "distinct_blocks": len({x for h in t.hash_ids for x in h}),
            "conversations": len(set(s)), "first_block_shared": all(h[0] == t.hash_ids[0][0] for h in t.hash_ids)}


# --- order-only LRU replay (the paper's Figure 9) ------------------------------------------------

def lru_replay(t: trace.Trace, capacity_tokens: float) -> float:
    """Hit rate of one LRU cache of the trace's 512-token blocks holding ``capacity_tokens``, the
    requests replayed in order with no timing (what Figure 9 of the Mooncake paper plots): each
    prompt hits its leading cached blocks (at most ``(input_len - 1) // 512``: the last token is
    always computed, as in the simulator), then all its full blocks become the most recent, its
    head last. Returns cached prompt tokens / prompt tokens. ``inf``: no eviction (the ceiling)."""
    b = t.block_tokens
    cap = np.inf if capacity_tokens == np.inf else int(capacity_tokens // b)
    lru: OrderedDict = OrderedDict()
    hit = 0
    for ids, n in zip(t.hash_ids, t.input_len):
        limit = (n - 1) // b
        k = 0
        while k < limit and ids[k] in lru:
            k += 1
        hit += k * b
        for x in reversed(ids[:n // b]):
            lru[x] = None
            lru.move_to_end(x)
        while len(lru) > cap:
            lru.popitem(last=False)
    return hit / sum(t.input_len)


def repeated_block_share(t: trace.Trace) -> float:
    """Blocks of the trace whose id appeared in an earlier request / all blocks: the share a cache
    with no limit could skip counted in blocks, with no last-token rule and partial blocks counted."""
    seen: set = set()
    repeated = 0
    for ids in t.hash_ids:
        repeated += sum(x in seen for x in ids)
        seen.update(ids)
    return repeated / sum(len(h) for h in t.hash_ids)


LRU_CAPACITIES = (1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 5e7, 1e8)


# --- one instance -------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def instance():
    """The chapter's instance (chapters 07 and 10): Llama-3-70B, FP8 weights and KV, 8 x H100."""
    return presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")


def cached_setup(gpu_share: float = 1.0, host_tokens: int = 0, block_size: int = 16,
                 host_link_gbs: float = HOST_LINK_GBS, cache: bool = True):
    """The instance with paged KV and a prefix cache: ``gpu_share`` of its KV space (a smaller GPU
    cache, as if less memory were left after the weights), a host tier of ``host_tokens``."""
    if not 0 < gpu_share <= 1:
        raise ValueError(f"gpu_share must be in (0, 1], got {gpu_share!r}")
    s = instance()
    pc = PrefixCache(host_tokens=host_tokens, host_link_gbs=host_link_gbs if host_tokens else None) if cache else None
    return s.replace(kv=Paged(block_size=block_size), prefix_cache=pc,
                     kv_capacity_tokens=int(s.kv_capacity_tokens * gpu_share))


@dataclass(frozen=True)
class Run:
    hit: float                   # cached prompt tokens / prompt tokens looked up
    host_hit: float              # of which read back from the host tier
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    slo_ok: float
    preemptions: int
    prefill_gpus: float          # GPUs' worth of prefill matmuls computed, on average over the window
    saved_gpus: float            # GPUs' worth of prefill the cache hits skipped
    gpus: int


def prefill_gpu_s_per_token() -> float:
    """GPU-seconds of one prompt token's matmuls on the chapter's instance (2 x params FLOPs at the
    preset's MFU, times its 8 GPUs): the rate at which hits turn into GPUs."""
    s = instance()
    return GPUS_PER_INSTANCE * 2 * s.params / (s.peak_flops * s.mfu)


def _gpu_figures(results) -> tuple[float, float]:
    """(prefill GPUs, saved GPUs) on average over the window, from the runs' token counters."""
    looked = sum(int(r.prompt_tokens.sum()) for r in results)
    cached = sum(int(r.cached_tokens.sum()) for r in results)
    per = prefill_gpu_s_per_token() / WINDOW_S
    return (looked - cached) * per, cached * per


@lru_cache(maxsize=64)
def run_one(gpu_share: float = 1.0, host_tokens: int = 0, block_size: int = 16,
            host_link_gbs: float = HOST_LINK_GBS, cache: bool = True) -> Run:
    """One instance on a quarter of the conversations of the first half hour."""
    s = cached_setup(gpu_share, host_tokens, block_size, host_link_gbs, cache)
    r = workload.run(s, workload.trace(half_hour(SHARE)))
    st = summarize(r, TTFT_SLO_S, TPOT_SLO_S)
    m = memory_stats(r)
    if r.prompt_tokens is None:                          # no prefix cache: every prompt token computed
        gpus = (float(r.input_len.sum()) * prefill_gpu_s_per_token() / WINDOW_S, 0.0)
    else:
        gpus = _gpu_figures([r])
    return Run(m.get("prefix_hit_rate", 0.0), m.get("host_hit_rate", 0.0), st["ttft_p50"], st["ttft_p99"],
               st["tpot_p99"], st["slo_ok"], m.get("preemptions", 0), *gpus, GPUS_PER_INSTANCE)


@lru_cache(maxsize=None)
def one_ceiling() -> float:
    """The one-instance workload's hit rate with an unbounded cache (order only)."""
    return lru_replay(half_hour(SHARE), np.inf)


GPU_SHARES = (0.125, 0.25, 0.5, 1.0)


def cache_figure(shares=GPU_SHARES, host_tokens: int = HOST_TOKENS):
    """Hit rate against the GPU cache size (tokens, log x), GPU only ("GPU only") and with the host
    tier ("GPU + host"), the order-only LRU replay of the same requests ("order-only LRU") and the
    unbounded ceiling; right: p50 / p99 TTFT of the simulated runs."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter
    cap = np.array([instance().kv_capacity_tokens * x for x in shares])
    gpu = [run_one(x) for x in shares]
    both = [run_one(x, host_tokens) for x in shares]
    order = [lru_replay(half_hour(SHARE), c) for c in cap]
    fig = Figure(figsize=(9, 3.4))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.88, wspace=0.3)
    left, right = fig.subplots(1, 2)
    left.plot(cap, [r.hit for r in gpu], "o-", label="GPU only")
    left.plot(cap, [r.hit for r in both], "s-", label=f"GPU + host ({host_tokens / 1e6:g}M tokens)")
    left.plot(cap, order, "^--", color="#888", label="order-only LRU")
    left.axhline(one_ceiling(), color="k", ls=":", label="unbounded cache")
    left.set_xscale("log")
    left.set_xlabel("GPU KV space (tokens, log scale)")
    left.set_ylabel("prefix hit rate (tokens)")
    left.set_ylim(0, max(0.5, one_ceiling() * 1.15))
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize=7, loc="lower right")
    for rows, mark, name in ((gpu, "o", "GPU only"), (both, "s", "GPU + host")):
        right.plot(cap, [r.ttft_p50_s for r in rows], mark + "-", label=f"{name} p50")
        right.plot(cap, [r.ttft_p99_s for r in rows], mark + "--", label=f"{name} p99")
    right.set_xscale("log")
    right.set_yscale("log")
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    right.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if v in (0.5, 2, 5) else ""))
    right.set_xlabel("GPU KV space (tokens, log scale)")
    right.set_ylabel("TTFT (s, log scale)")
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=7)
    fig.suptitle("one 8 x H100 instance, Llama-3-70B FP8, a quarter of the conversations (first 30 min)")
    return fig


# --- read back or recompute ------------------------------------------------------------------------

def readback_vs_recompute(tokens: int, link_gbs: float = HOST_LINK_GBS, setup=None,
                          kv_bytes_per_token: float | None = None) -> dict:
    """Seconds to read ``tokens`` of KV back over ``link_gbs`` against recomputing their matmuls
    (2 x params FLOPs per token at the preset's MFU: what the simulator's host-tier rule compares;
    attention would add more), and the link speed where the two are equal."""
    s = setup or instance()
    per_token_bytes = s.kv_bytes_per_token if kv_bytes_per_token is None else kv_bytes_per_token
    per_token_s = 2 * s.params / (s.peak_flops * s.mfu)
    return {"kv_gb": tokens * per_token_bytes / GB, "readback_s": tokens * per_token_bytes / (link_gbs * GB),
            "recompute_s": tokens * per_token_s, "break_even_gbs": per_token_bytes / per_token_s / GB}


# --- fleets and routers ------------------------------------------------------------------------------

ROUTERS = ("least_requests", "session_affinity", "prefix_aware")
ROUTER_ZH = {"least_requests": "最少请求", "session_affinity": "会话亲和", "prefix_aware": "前缀感知"}


def _fleet_result(router: str, gpu_share: float, host_tokens: int, block_size: int):
    t = half_hour()
    f = Fleet.of(cached_setup(gpu_share, host_tokens, block_size), INSTANCES, router=router,
                 gpus_per_instance=GPUS_PER_INSTANCE)
    return run_fleet(f, workload.trace(t), sessions=sessions(t))


@lru_cache(maxsize=32)
def fleet_result(router: str = "prefix_aware", gpu_share: float = 1.0, host_tokens: int = 0, block_size: int = 16):
    """Four instances on the whole first half hour of the trace behind ``router``."""
    if router not in ROUTERS:
        raise ValueError(f"router must be one of {ROUTERS}, got {router!r}")
    return _fleet_result(router, gpu_share, host_tokens, block_size)


def fleet_summary(r) -> Run:
    st = summarize_fleet(r, TTFT_SLO_S, TPOT_SLO_S)
    return Run(st["prefix_hit_rate"], st["host_hit_rate"], st["ttft_p50"], st["ttft_p99"], st["tpot_p99"],
               st["slo_ok"], st["preemptions"], *_gpu_figures(r.instance_results), INSTANCES * GPUS_PER_INSTANCE)


def fleet_run(router: str = "prefix_aware", gpu_share: float = 1.0, host_tokens: int = 0,
              block_size: int = 16) -> Run:
    return fleet_summary(fleet_result(router, gpu_share, host_tokens, block_size))


def imbalance(router: str, **kw) -> float:
    """Requests served by the busiest instance / the mean."""
    r = fleet_result(router, **kw)
    counts = np.bincount(r.instance[r.instance >= 0], minlength=INSTANCES)
    return float(counts.max() / counts.mean())


def ttft_figure(routers=ROUTERS):
    """TTFT CDF per router (log x) on the fleet, default cache."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 3.2))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.9)
    ax = fig.subplots()
    for router in routers:
        x = np.sort(fleet_result(router).ttft)
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=f"{router} (hit {fleet_run(router).hit:.0%})")
    ax.axvline(TTFT_SLO_S, color="#888", ls="--", label=f"{TTFT_SLO_S:g} s")
    ax.set_xscale("log")
    ax.set_xlabel("TTFT (s, log scale)")
    ax.set_ylabel("share of requests")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{INSTANCES} x (8 x H100), Mooncake conversation trace, first 30 min")
    return fig


def run_cells(r: Run) -> list:
    return [f"{r.hit:.1%}", f"{r.host_hit:.1%}", f"{r.ttft_p50_s:.2f} s", f"{r.ttft_p99_s:.2f} s",
            f"{r.tpot_p99_s * 1e3:.0f} ms", f"{r.slo_ok:.1%}", r.preemptions, f"{r.prefill_gpus:.2f}",
            f"{r.saved_gpus:.2f}"]


RUN_HEAD = ["hit", "from host", "p50 TTFT", "p99 TTFT", "p99 TPOT", "SLO met", "preempted", "prefill GPUs",
            "GPUs saved"]


# --- the panel's grid -------------------------------------------------------------------------------

PANEL_SHARES = (0.25, 0.5, 1.0)
PANEL_HOSTS = (0, HOST_TOKENS)
PANEL_BLOCKS = (16, 512, 2048)
QUANTILES = tuple(np.round(np.linspace(0.05, 1.0, 20), 2).tolist())


def grid_keys():
    return [(s, h, b, r) for s in PANEL_SHARES for h in PANEL_HOSTS for b in PANEL_BLOCKS for r in ROUTERS]


def _key(share, host, block, router) -> str:
    return f"{share:g}|{host}|{block}|{router}"


@lru_cache(maxsize=None)
@memo.shipped("ch06.grid_point", "course/ch06.py", "data/traces/mooncake_conversation_trace.jsonl.gz")
def grid_point(share: float, host: int, block: int, router: str) -> dict:
    """One fleet run of the panel: its figures and the TTFT at ``QUANTILES``."""
    r = _fleet_result(router, share, host, block)
    return {"run": asdict(fleet_summary(r)), "ttft_quantiles": np.quantile(r.ttft, QUANTILES).tolist()}


@dataclass(frozen=True)
class PanelAnswer:
    run: Run
    ttft_quantiles: tuple
    baseline: Run                 # least_requests with the same cache: what routing adds


def panel_answer(gpu_share: float, host_tokens: int, block_size: int, router: str) -> PanelAnswer:
    if (gpu_share, host_tokens, block_size, router) not in set(grid_keys()):
        raise ValueError(f"no panel choice gpu_share={gpu_share!r}, host_tokens={host_tokens!r}, "
                         f"block_size={block_size!r}, router={router!r}; choices: {PANEL_SHARES}, "
                         f"{PANEL_HOSTS}, {PANEL_BLOCKS}, {ROUTERS}")
    p = grid_point(gpu_share, host_tokens, block_size, router)
    base = grid_point(gpu_share, host_tokens, block_size, "least_requests")
    return PanelAnswer(Run(**p["run"]), tuple(p["ttft_quantiles"]), Run(**base["run"]))


def panel_html(a: PanelAnswer) -> str:
    r, b = a.run, a.baseline
    rows = [("前缀命中率", f"{r.hit:.1%}（其中从主机内存读回 {r.host_hit:.1%}）"),
            ("同样缓存、最少请求路由", f"{b.hit:.1%}"),
            ("TTFT P50 / P99", f"{r.ttft_p50_s:.2f} s / {r.ttft_p99_s:.2f} s"),
            ("TPOT P99", f"{r.tpot_p99_s * 1e3:.0f} ms"),
            (f"满足 SLO（TTFT ≤ {TTFT_SLO_S:g} s，TPOT ≤ {TPOT_SLO_S * 1e3:.0f} ms）", f"{r.slo_ok:.1%}"),
            ("被抢占的次数", f"{r.preemptions}"),
            ("舰队的 GPU", f"{r.gpus} 张"),
            ("prefill 平均占用的 GPU", f"{r.prefill_gpus:.2f} 张（命中省下 {r.saved_gpus:.2f} 张）")]
    return rows_html(rows)


def panel_chart(a: PanelAnswer) -> plots.Chart:
    chart = plots.Chart(1, width=420, height=240, title="TTFT 分布（对数横轴）")
    chart.add(0, "TTFT", a.ttft_quantiles, QUANTILES, color="#1f77b4")
    chart.vline(0, "SLO", TTFT_SLO_S, color="#d62728")
    chart.axes(0, xlabel="TTFT (s)", ylabel="请求占比", logx=True, ylim=(0, 1.02))
    return chart


class PrefixPanel(DropdownPanel):
    """GPU cache x host tier x block size x router -> hit rate, TTFT p50/p99, prefill GPUs, from the
    shipped table of fleet runs (a look-up per move; live runs while the table is stale)."""

    width, per_row, has_chart = "260px", 2, True

    def controls_spec(self) -> dict:
        cap = instance().kv_capacity_tokens
        return {
            "gpu_share": ("GPU 缓存", [(f"{x:g} × KV（{cap * x / 1e6:.2f}M token）", x) for x in PANEL_SHARES], 1.0),
            "host_tokens": ("主机层", [("无", 0), (f"{HOST_TOKENS / 1e6:g}M token（约 1 TB）", HOST_TOKENS)], 0),
            "block_size": ("块大小", PANEL_BLOCKS, 16),
            "router": ("路由", [(f"{ROUTER_ZH[r]}（{r}）", r) for r in ROUTERS], "prefix_aware"),
        }

    def update(self) -> PanelAnswer:
        self.answer = panel_answer(**self.choice())
        self.table.value = panel_html(self.answer)
        self.figure = panel_chart(self.answer)
        self.chart.value = self.figure.svg()
        return self.answer


def prefix_panel() -> PrefixPanel:
    return PrefixPanel()

