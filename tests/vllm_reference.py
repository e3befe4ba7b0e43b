"""vLLM V1's scheduler and KV cache manager as a plain per-request stepper, in the simulator's terms.

This is the yardstick for ``Setup(kv=Paged(...))``: written to be obviously right, not fast, one
object per request and one id per block, every running request touched at every step. It follows
vLLM's code at commit 003df2961dd8830c317a61f9745ccd557da9fa06 (``vllm/v1/core/sched/scheduler.py``
``Scheduler.schedule``/``update_from_output``/``_preempt_request``, ``vllm/v1/core/kv_cache_manager.py``
``get_computed_blocks``/``allocate_slots``/``free``, ``vllm/v1/core/block_pool.py``), restated here
(no code copied) for one full-attention KV group with the defaults ``enable_chunked_prefill=True``,
``long_prefill_token_threshold=0``, ``scheduler_reserve_full_isl=True``, no KV connector, no
encoder, no LoRA, synchronous scheduling. See tests/VLLM_PARITY.md for the reading and its limits.

The rule, one step:

1. Requests with ``arrival <= now`` join the waiting queue (FCFS: a deque; ``priority``: ordered
   by (priority, arrival, id), smaller first). Nothing waiting or running: ``now`` jumps ahead.
2. Running requests in order, while the token budget (``max_num_batched_tokens``) is > 0: each
   asks for ``num_tokens + drafts - num_computed`` tokens, cut to the budget (a decoder wants
   1 + k with speculative decoding, a prompt the rest of its prompt). Its KV must hold
   ``num_computed + tokens + lookahead`` slots (lookahead = k with speculative decoding, else 0);
   if the free queue lacks the new blocks, a running request is preempted (FCFS: the last in
   ``running``; ``priority``: the max of (priority, arrival), whose tokens scheduled this step are
   handed back) and the allocation is retried; a request that preempts itself ends the pass.
   A victim frees its blocks (tail first into the free queue), its computed counter drops to 0,
   and it goes back to the head of the waiting queue (FCFS; priority: into the heap).
3. Only in a step that preempted no one: while the budget is > 0 and fewer than ``max_num_seqs``
   run, the waiting head is looked up in the prefix cache (whole named blocks, at most
   ``num_tokens - 1`` tokens), asks for ``min(num_tokens - hit, budget)`` tokens, and is admitted
   if both (a) its whole sequence's blocks (``num_tokens``, less the hit) and (b) this chunk's
   blocks (hit + chunk + lookahead) fit in the free queue, each with ``watermark x num_blocks``
   blocks to spare while any request runs (none spared when nothing runs). Hit blocks that were
   free count as blocks to take. Otherwise admission stops.
4. Every allocation names (caches) the request's blocks that the scheduled tokens fill, capped at
   its known tokens (drafts are not cached): full blocks become shareable the step they are
   scheduled, by requests running or admitted later in the same step.
5. The step lasts ``setup.step_time(tokens, context, pairs, decoders)`` plus the drafts'
   ``k x draft_cost x setup.step_time(decoders, context)``; context is the sum over running
   requests of their computed tokens (+1 for a decoder: the token it is computing), pairs the
   prompt chunks' attention pairs (``sim.setup.attention_pairs``), as in tests/kv_reference.py.
6. At the step's end, in scheduling order: each request's computed counter grows by its tokens;
   one that reached its known tokens samples (a chunk short of the prompt's end samples nothing):
   1 token, or with d drafts 1 + the drafts accepted (``Speculative.alpha``, drawn from
   ``Speculative.rng(request)``, d draws at most, as ``Speculative.draw`` does for d = k), and its
   counter drops by the rejected drafts. A request with all its output tokens finishes and frees
   its blocks, last block first.

Block identity for prefix caching: block j of a request is named by the first prefix segment that
covers it all (``(key << KEY_SHIFT) | j``, as sim.kv.prefix_cache); any other full block is named
privately (request id, j): vLLM hashes every full block by its tokens, so a request's own
private blocks hit when it is readmitted after a preemption, and nobody else's.

The free queue (vLLM's ``FreeKVCacheBlockQueue``) is one LRU list of block ids: ids 0..n-1 at the
start (vLLM's null block 0 is not modelled: n = ``kv_capacity_tokens // block_size`` usable
blocks, vLLM's block i is id i - 1 here), new blocks come from its head (a named block there is
evicted), a request's freed blocks go tail first: named ones to the queue's tail, unnamed ones
(the partial last block, lookahead slots) to its head, since they can never hit; a hit on a
free block takes it out of the queue (``touch``).

Two smaller rules of this commit are kept: ``long_prefill_token_threshold`` (a cap on any one
request's tokens per step, 0 = none), and the padding of a waiting request that needs a single
token while only decoders were scheduled (speculative decoding): it is scheduled 1 + k tokens,
its k placeholder drafts all rejected, so speculative batches stay uniform.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from sim.kv.prefix_cache import KEY_SHIFT
from sim.result import RECOMPUTE
from sim.setup import attention_pairs

POLICIES = ("fcfs", "priority")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(eq=False)
class VReq:
    """One request, with vLLM's counters: ``num_tokens`` = prompt + output so far, and
    ``num_computed`` = tokens whose KV is written (chunks, prefix hits, recompute, speculation)."""

    id: int
    arrival: float
    input_len: int
    output_len: int
    prefix: tuple | None = None
    priority: int = 0
    generated: int = 0                 # output tokens so far
    num_computed: int = 0
    prompt_end: int = 0                # num_tokens when this attempt was admitted
    blocks: list = field(default_factory=list)
    num_named: int = 0                 # blocks[:num_named] carry their name
    first_token: float | None = None
    finish: float | None = None
    preemptions: int = 0
    cached_tokens: int = 0             # prefix-cache hit tokens, summed over admissions
    hits: list = field(default_factory=list)     # hit tokens at each admission
    rng: object = None
    padded: bool = False               # this step's drafts are placeholders (never accepted)

    @property
    def num_tokens(self) -> int:
        return self.input_len + self.generated

    def decoding(self) -> bool:
        """Past this attempt's prompt: it computes the token it sampled last."""
        return self.num_computed >= self.prompt_end

    def sort_key(self):
        return (self.priority, self.arrival, self.id)

    def __lt__(self, other):                       # the priority queue's order
        return self.sort_key() < other.sort_key()


def block_name(r: VReq, j: int, B: int):
    """Block j's name: the first prefix segment covering all of it, else private to the request."""
    for key, end in r.prefix or ():
        if end >= (j + 1) * B:
            return (key << KEY_SHIFT) | j
    return ("private", r.id, j)


class BlockPool:
    """vLLM's block pool for one KV group: ref counts, names, the free queue (LRU, head first)."""

    def __init__(self, num_blocks: int, caching: bool):
        self.num_blocks = num_blocks
        self.caching = caching
        self.free_queue = OrderedDict((b, None) for b in range(num_blocks))
        self.ref = [0] * num_blocks
        self.name = [None] * num_blocks
        self.cached: dict = {}             # name -> {block id: None}, first cached first
        self.evicted: list = []            # (block id, name) in eviction order, for tests

    def num_free(self) -> int:
        return len(self.free_queue)

    def cached_block(self, name):
        ids = self.cached.get(name)
        return next(iter(ids)) if ids else None

    def touch(self, blocks) -> None:
        for b in blocks:
            if self.ref[b] == 0:
                del self.free_queue[b]
            self.ref[b] += 1

    def get_new_blocks(self, n: int) -> list:
        assert n <= self.num_free(), "allocation past the free queue"
        out = []
        for _ in range(n):
            b, _ = self.free_queue.popitem(last=False)
            h = self.name[b]
            if h is not None:              # evict: the oldest free block loses its name
                del self.cached[h][b]
                if not self.cached[h]:
                    del self.cached[h]
                self.name[b] = None
                self.evicted.append((b, h))
            self.ref[b] = 1
            out.append(b)
        return out

    def free_blocks(self, ordered) -> None:
        """Blocks whose count drops to 0 rejoin the free queue: named ones at its tail in the order
        given, unnamed ones (they can never hit) at its head, in the order given, so they are
        reused first. With caching off every block goes to the tail."""
        unnamed = []
        for b in ordered:
            self.ref[b] -= 1
            if self.ref[b] == 0:
                if self.caching and self.name[b] is None:
                    unnamed.append(b)
                else:
                    self.free_queue[b] = None
        for b in reversed(unnamed):
            self.free_queue[b] = None
            self.free_queue.move_to_end(b, last=False)

    def name_blocks(self, r: VReq, num_full: int, B: int) -> None:
        """Cache r's blocks [num_named, num_full) under their names (vLLM's cache_full_blocks)."""
        if not self.caching:
            return
        for j in range(r.num_named, num_full):
            b = r.blocks[j]
            if self.name[b] is None:
                h = block_name(r, j, B)
                self.name[b] = h
                self.cached.setdefault(h, {})[b] = None
        r.num_named = max(r.num_named, num_full)


@dataclass
class Step:
    start: float
    duration: float
    tokens: int
    context: int
    pairs: int
    decoders: int
    extra_s: float
    flags: int
    scheduled: dict                    # request id -> tokens scheduled, in scheduling order
    preempted: list                    # request ids preempted while scheduling, in order
    admitted: list                     # request ids admitted from the waiting queue, in order
    emitted: dict                      # request id -> output tokens emitted at the step's end
    hits: dict                         # admitted request id -> prefix-cache hit tokens
    held: dict                         # scheduled request id -> its block ids during the step


class VllmV1:
    """The stepper. ``add(...)`` requests, then ``step()`` until ``done()``; or use ``vllm_run``."""

    def __init__(self, setup, *, policy: str | None = None, speculative=None, watermark=None,
                 prefix_caching: bool | None = None, long_prefill_token_threshold: int = 0,
                 start: float = 0.0):
        kv = setup.kv
        if kv is None:
            raise ValueError("vllm_reference models paged KV: Setup.kv must be 'paged' or a sim.kv.Paged")
        if getattr(kv, "preemption", "recompute") != "recompute":
            raise ValueError("vLLM V1 preempts by recompute only; swap is not V1")
        pc = setup.prefix_cache
        if pc is not None and pc.host_tokens:
            raise ValueError("vLLM V1's core has no host tier (that is a KV connector); not modelled")
        self.setup = setup
        self.policy = policy if policy is not None else getattr(kv, "policy", "fcfs")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        self.spec = speculative if speculative is not None else setup.speculative
        self.lookahead = self.spec.k if self.spec is not None else 0
        self.B = kv.block_size
        caching = (pc is not None) if prefix_caching is None else prefix_caching
        self.pool = BlockPool(setup.kv_capacity_tokens // self.B, caching)
        wm = kv.watermark if watermark is None else watermark
        self.watermark_blocks = int(wm * self.pool.num_blocks)
        self.reqs: list[VReq] = []
        self.pending: list[VReq] = []      # not arrived yet, in arrival order
        self.waiting = deque() if self.policy == "fcfs" else []
        self.running: list[VReq] = []
        self.threshold = long_prefill_token_threshold
        self.now = float(start)
        self.steps: list[Step] = []

    # --- the waiting queue -------------------------------------------------------------------
    def _queue_add(self, r):
        if self.policy == "fcfs":
            self.waiting.append(r)
        else:
            heapq.heappush(self.waiting, r)

    def _queue_prepend(self, r):
        if self.policy == "fcfs":
            self.waiting.appendleft(r)
        else:
            heapq.heappush(self.waiting, r)

    def _queue_peek(self):
        return self.waiting[0]

    def _queue_pop(self):
        return self.waiting.popleft() if self.policy == "fcfs" else heapq.heappop(self.waiting)

    # --- requests ----------------------------------------------------------------------------
    def add(self, arrival, input_len, output_len, prefix=None, priority=0) -> VReq:
        """A request joining the waiting queue at the first step start at or after ``arrival``
        (arrival also orders the priority queue). Ids are 0, 1, ... in the order added."""
        if input_len < 1 or output_len < 1:
            raise ValueError(f"input_len and output_len must be >= 1, got {input_len}, {output_len}")
        r = VReq(len(self.reqs), float(arrival), int(input_len), int(output_len),
                 tuple(prefix) if prefix else None, int(priority))
        self.reqs.append(r)
        k = len(self.pending)
        while k and self.pending[k - 1].arrival > r.arrival:
            k -= 1
        self.pending.insert(k, r)
        return r

    def waiting_ids(self) -> list:
        """The waiting queue, head first."""
        if self.policy == "fcfs":
            return [r.id for r in self.waiting]
        return [r.id for r in sorted(self.waiting)]

    def running_ids(self) -> list:
        return [r.id for r in self.running]

    def done(self) -> bool:
        return all(r.finish is not None for r in self.reqs)

    # --- KV manager calls ----------------------------------------------------------------------
    def _lookup(self, r: VReq) -> list:
        """get_computed_blocks: named blocks from the first, at most num_tokens - 1 tokens."""
        if not self.pool.caching:
            return []
        hits = []
        for j in range((r.num_tokens - 1) // self.B):
            b = self.pool.cached_block(block_name(r, j, self.B))
            if b is None:
                break
            hits.append(b)
        return hits

    def _allocate_running(self, r: VReq, n: int) -> bool:
        """allocate_slots for a running request (no watermark, no whole-sequence check)."""
        need = cdiv(r.num_computed + n + self.lookahead, self.B) - len(r.blocks)
        if need > self.pool.num_free():
            return False
        if need > 0:
            r.blocks += self.pool.get_new_blocks(need)
        self.pool.name_blocks(r, min(r.num_computed + n, r.num_tokens) // self.B, self.B)
        return True

    def _allocate_waiting(self, r: VReq, hits: list, n: int) -> bool:
        """allocate_slots for the waiting head with its prefix hits (whole-sequence check, watermark)."""
        pool, B = self.pool, self.B
        hit_tokens = len(hits) * B
        free_hits = sum(1 for b in hits if pool.ref[b] == 0)
        spare = self.watermark_blocks if self.running else 0
        whole = cdiv(r.num_tokens, B) - len(hits) + free_hits
        if whole + spare > pool.num_free():
            return False
        slots = cdiv(hit_tokens + n + self.lookahead, B)
        if slots - len(hits) + free_hits + spare > pool.num_free():
            return False
        pool.touch(hits)
        r.blocks = list(hits) + pool.get_new_blocks(slots - len(hits))
        r.num_named = len(hits)
        pool.name_blocks(r, min(hit_tokens + n, r.num_tokens) // B, B)
        return True

    def _preempt(self, r: VReq) -> None:
        self.pool.free_blocks(reversed(r.blocks))
        r.blocks = []
        r.num_named = 0
        r.num_computed = 0
        r.preemptions += 1
        self._queue_prepend(r)

    # --- one step --------------------------------------------------------------------------------
    def step(self) -> Step | None:
        """Run one step (or jump to the next arrival when idle). Returns the step, or None if
        the call only moved the clock or only preempted."""
        while self.pending and self.pending[0].arrival <= self.now:
            self._queue_add(self.pending.pop(0))
        if not self.waiting and not self.running:
            self.now = self.pending[0].arrival
            return None
        work: dict = {}                            # request -> tokens, in scheduling order
        budget, preempted = self._schedule_running(work)
        admitted, hits, flags = ([], {}, 0) if preempted else self._schedule_waiting(work, budget)
        if not work:
            if not preempted and not self.running:
                r = self._queue_peek()
                raise RuntimeError(f"request {r.id} ({r.num_tokens} tokens) can never be admitted: "
                                   f"{self.pool.num_free()} free blocks of {self.B} tokens")
            return None                            # vLLM runs no model for an empty step
        setup = self.setup
        tokens = sum(work.values())
        context = sum(q.num_computed + (1 if q.decoding() else 0) for q in self.running)
        pairs = sum(attention_pairs(q.num_computed, min(n, q.prompt_end - q.num_computed))
                    for q, n in work.items() if not q.decoding())
        decs = sum(1 for q in work if q.decoding())
        extra = 0.0
        if self.spec is not None and decs:
            extra += self.spec.k * self.spec.draft_cost * setup.step_time(decs, context)
        start = self.now
        duration = setup.step_time(tokens, context, pairs, decs) + extra
        self.now += duration
        held = {q.id: list(q.blocks) for q in work}
        emitted = self._end_of_step(work)
        step = Step(start, duration, tokens, context, pairs, decs, extra, flags,
                    {q.id: n for q, n in work.items()}, [q.id for q in preempted], admitted,
                    emitted, hits, held)
        self.steps.append(step)
        return step

    def _tokens_wanted(self, r: VReq, n: int, budget: int) -> int:
        if 0 < self.threshold < n:
            n = self.threshold
        return min(n, budget)

    def _schedule_running(self, work: dict):
        """Running requests in order while budget lasts; preempt when blocks run short.
        Returns (budget left, victims in preemption order)."""
        budget = self.setup.max_num_batched_tokens
        preempted: list = []
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            drafts = self.spec.k if (self.spec is not None and r.decoding()) else 0
            n = self._tokens_wanted(r, r.num_tokens + drafts - r.num_computed, budget)
            while not self._allocate_running(r, n):
                if self.policy == "priority":
                    victim = max(self.running, key=lambda q: (q.priority, q.arrival))
                    self.running.remove(victim)
                    if victim in work:             # scheduled earlier this step: hand back
                        budget += work.pop(victim)
                        i -= 1
                else:
                    victim = self.running.pop()
                self._preempt(victim)
                preempted.append(victim)
                if victim is r:
                    return budget, preempted       # nothing left to preempt: the pass ends
            work[r] = n
            budget -= n
            i += 1
        return budget, preempted

    def _schedule_waiting(self, work: dict, budget: int):
        """Admit from the waiting queue's head while budget, seats and blocks last.
        Returns (admitted ids, their hit tokens, step flags)."""
        B = self.B
        only_decoders = bool(work) and all(q.decoding() for q in work)   # spec padding applies
        admitted, hits_of, flags = [], {}, 0
        while self.waiting and budget > 0 and len(self.running) < self.setup.max_num_seqs:
            r = self._queue_peek()
            hits = self._lookup(r)
            n = r.num_tokens - len(hits) * B
            pad = self.spec is not None and n == 1 and only_decoders
            if pad:
                n = 1 + self.spec.k
                if n > budget:
                    break
            n = self._tokens_wanted(r, n, budget)
            if not self._allocate_waiting(r, hits, n):
                break
            self._queue_pop()
            r.padded = pad
            r.num_computed = len(hits) * B
            r.prompt_end = r.num_tokens
            r.cached_tokens += len(hits) * B
            r.hits.append(len(hits) * B)
            if r.preemptions:
                flags |= RECOMPUTE
            self.running.append(r)
            work[r] = n
            budget -= n
            admitted.append(r.id)
            hits_of[r.id] = len(hits) * B
        return admitted, hits_of, flags

    def _end_of_step(self, work: dict) -> dict:
        """update_from_output: counters advance, samples are drawn, finished requests free their
        blocks (in scheduling order). Returns {request id: tokens emitted}."""
        emitted = {}
        for r, n in work.items():
            drafts = r.num_computed + n - r.num_tokens      # > 0 only for a decoder's drafts
            r.num_computed += n
            if r.num_computed < r.num_tokens:
                continue                                     # a prompt chunk: nothing sampled
            accepted = 0
            if r.padded:                                     # placeholder drafts: all rejected
                r.num_computed -= drafts
                r.padded = False
            elif drafts > 0:
                if r.rng is None:
                    r.rng = self.spec.rng(r.id)
                while accepted < drafts and r.rng.random() < self.spec.alpha:
                    accepted += 1
                r.num_computed -= drafts - accepted
            out = min(1 + accepted, r.output_len - r.generated)
            r.generated += out
            emitted[r.id] = out
            if r.first_token is None:
                r.first_token = self.now
            if r.generated == r.output_len:
                r.finish = self.now
                self.running.remove(r)
                self.pool.free_blocks(reversed(r.blocks))
                r.blocks = []
        return emitted

    def run(self):
        while not self.done():
            self.step()
        return self


def vllm_run(setup, arrivals, inputs, outputs, prefixes=None, priorities=None, **options) -> VllmV1:
    """Run requests to the end. ``options``: policy, speculative, watermark, prefix_caching
    (overrides of what ``setup`` says). Returns the stepper: ``.reqs`` (first_token, finish,
    preemptions, cached_tokens per request) and ``.steps`` (one ``Step`` per model step)."""
    n = len(arrivals)
    prefixes = prefixes or [None] * n
    priorities = priorities or [0] * n
    sim = VllmV1(setup, **options)
    for a, i, o, p, q in zip(arrivals, inputs, outputs, prefixes, priorities):
        sim.add(a, i, o, p, q)
    return sim.run()


def vllm_stepper(*, block_size=16, vllm_blocks=10000, budget=8192, seqs=16, caching=False,
                 watermark=0.0, policy="fcfs", speculative=None, threshold=0, start=0.0,
                 kv_bytes=0) -> VllmV1:
    """A stepper set up like vLLM's test helpers (``create_scheduler``: 16 seqs, 8192 tokens,
    10000 blocks of 16): ``vllm_blocks`` counts vLLM's null block, so ``vllm_blocks - 1`` are
    usable. Steps last max(tokens, 2 + kv_bytes x context) ticks of 1/1024 s (tests/conftest.py's
    hand-worked instance)."""
    from conftest import tiny_setup
    from sim.kv import Paged, PrefixCache
    setup = tiny_setup(kv=kv_bytes, budget=budget, seqs=seqs, cap=(vllm_blocks - 1) * block_size)
    setup = setup.replace(kv=Paged(block_size=block_size, watermark=watermark),
                          prefix_cache=PrefixCache() if caching else None)
    return VllmV1(setup, policy=policy, speculative=speculative, prefix_caching=caching,
                  long_prefill_token_threshold=threshold, start=start)


def engine_mismatches(res, sim: VllmV1) -> list[str]:
    """Where an engine run (a ``sim.SimResult`` of the same requests, in the same order) differs
    from the reference run ``sim``: per-request first-token and finish times, preemptions and
    prefix-cache hits, and the step log (start, tokens, context, decoders, pairs, extra seconds).
    Empty when they agree bit for bit; each entry names the field and the first index that differs."""
    import numpy as np

    def first_diff(name, got, want):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return [f"{name}: {got.shape[0]} entries, reference has {want.shape[0]}"]
        same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" else got == want
        if same.all():
            return []
        i = int(np.flatnonzero(~same)[0])
        return [f"{name}[{i}]: engine {got[i]!r}, reference {want[i]!r}"]

    nan = float("nan")
    out = first_diff("first_token", res.first_token,
                     [nan if r.first_token is None else r.first_token for r in sim.reqs])
    out += first_diff("finish", res.finish, [nan if r.finish is None else r.finish for r in sim.reqs])
    for name, attr in (("preemptions", "preemptions"), ("cached_tokens", "cached_tokens")):
        got = getattr(res, name, None)
        if got is not None:
            out += first_diff(name, got, [getattr(r, attr) for r in sim.reqs])
    log = res.steps
    for field in ("start", "tokens", "context", "decoders", "pairs", "extra_s"):
        out += first_diff(f"steps.{field}", getattr(log, field), [getattr(s, field) for s in sim.steps])
    return out
