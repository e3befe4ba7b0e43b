"""Paged KV with preemption: vLLM V1's KV cache manager, as the engine's KV manager (sim.kv.manager).

The handbook's rule (``Reserve``, the default: ``Setup.kv = None``) reserves a request's whole KV,
``input_len + output_len`` tokens, at admission and never preempts. ``Paged`` hands KV out in blocks
of ``block_size`` tokens as a request grows, following vLLM V1 (read at vllm-project/vllm
``vllm/v1/core/sched/scheduler.py`` ``schedule``/``_preempt_request``, ``vllm/v1/core/kv_cache_manager.py``
``allocate_slots``/``get_computed_blocks``, ``vllm/v1/core/block_pool.py``):

- admission: the waiting head is admitted if its whole sequence's blocks (prompt, or prompt plus
  generated tokens after a recompute; less prefix-cache hits, counting hits on free blocks as
  taken) fit, keeping ``watermark`` x all blocks spare only while other requests run (V1's default
  watermark is 0.0); only its first chunk's blocks are allocated then (``allocate_chunk``);
- running requests in admission order: a prompt chunk allocates its blocks as it is scheduled; a
  decoding request whose KV holds L tokens needs a new block in a step where L is a multiple of B.
  The token a request emits last is never computed, so a request holds at most
  ``ceil((input_len + output_len - 1) / B)`` blocks;
- when an allocation does not fit, running requests are preempted from the most recently admitted
  (V1 FCFS: ``running``'s tail) until it does, and that step admits no one; if the victim is the
  request being scheduled, the pass ends; a step in which everyone was preempted runs no model.
  A victim goes back to the queue's head (victims in admission order). ``recompute`` (V1's only
  way): its KV is dropped, and on readmission it prefills its prompt plus the tokens it had
  generated; the end of that prefill emits its next token. ``swap`` is not V1 (V0 had it): its KV
  is copied to host memory, ``tokens x kv_bytes_per_token / swap_gbs`` seconds added to the step
  that swaps it out and to the one that swaps it back in; host memory is not bounded.
- ``policy="priority"`` (V1's priority scheduler): the waiting queue is ordered by (priority,
  arrival, id), smaller first, preempted requests included; the victim is the running request
  with the largest (priority, arrival), the first in admission order on a tie; a victim already
  scheduled in the pass hands its tokens back to the budget, and a victim that is the request
  being scheduled ends the pass, so the decoders after it compute nothing that step;
- speculative decoding (``Setup.speculative``, V1 with a draft model): every scheduled chunk gets
  ``k`` lookahead slots beyond it (admission checks the chunk plus lookahead besides the whole
  sequence), a decoder computes its token and ``k`` drafts, so its KV must hold
  ``num_tokens + 2k`` slots, growing by the tokens each step emits (drawn per request,
  ``sim.speculative``; a recomputed request continues its draws); the token budget cuts decoders
  in running order (n < 1 + k tokens: n - 1 drafts; none left: the decoder waits the step); a
  1-token prompt admitted beside decoders only is padded to 1 + k tokens (V1's ``pad_spec_decode``).

Prefix caching (``Setup.prefix_cache``, sim/kv/prefix_cache.py) follows V1's ``cache_full_blocks``
and ``FreeKVCacheBlockQueue``: every full block is named as soon as it is scheduled (a prompt chunk
names the blocks it fills; a decoder names a block the step its token fills it), so requests
running side by side, or admitted later in the same step, hit it; a block no prefix segment
covers gets a name private to its request (only that request hits it, after a preemption); a
block computed twice is a second copy (a hit takes the first named); freed blocks join one free
queue, unnamed ones (a partial last block) at its head and named ones at its tail, last block
first; allocation takes the head, evicting a named block there; a hit on a free block takes it
out of the queue and counts as a block to take at admission. When decoders' blocks fall short,
the decoders before the first that fails take every free block before any victim is freed
(V1 allocates decoder by decoder), and KV finishing in one step is released in running order.

``tests/test_engine_vs_vllm.py`` checks the engine against ``tests/vllm_reference.py`` (a plain
per-request restatement of those vLLM files) bit for bit on all of the above, with and without
prefix caching (first-token and finish times, preemptions, prefix hits, every step);
``tests/test_engine_priority.py`` and ``tests/test_engine_spec_paged.py`` do the same for priority
and speculative decoding (without a prefix cache: either with one is refused). Not modelled, or
modelled otherwise than V1:

- the host tier (``PrefixCache.host_tokens``, this simulator's own; V1 offloads through a KV
  connector), and KV that arrives whole (a swapped-in request, a PD decode-side arrival): its
  blocks are named when it releases them, not as they fill; with speculative decoding a decoder's
  blocks are named at its release too (V1 names them as they fill);
- decoders take their token even past ``max_num_batched_tokens`` (the handbook's rule; V1 cuts
  them by the budget). With ``max_num_seqs <= max_num_batched_tokens``, which vLLM requires, the
  two cannot differ;
- speculative decoding only with recompute and no prefix cache (``Setup`` refuses the other
  combinations); no prefilled (PD) requests with it; EAGLE's hashing;
- ``priority`` with ``swap`` (refused: V1 has no swap); priorities with the handbook's ``Reserve``
  (it never preempts, so a priority would only order admission: refused, use ``Paged``);
- long-prefill thresholds, a KV connector (the host tier here is this simulator's own), encoder
  caches, LoRA.

Aggregates keep the engine exact and fast: a decoder's KV grows by one token a step, so whether it
needs a block at step s depends only on ``(L - s) mod B``, fixed while it decodes. Counting
decoders per phase gives every step's new blocks without touching a request, and the number of
steps a quiet run can take before the blocks run out. Two rules need more: with ``priority`` a
step whose decoders' blocks fall short is scheduled one decoder at a time (the victim can be
anywhere in the running order); speculating decoders grow by their drawn tokens, so each one's
blocks per step are planned from its draws when it starts decoding (every step is an event step),
and planned again where the budget cuts its drafts.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.kv.manager import RESUME
from sim.kv.ratio import RatioReserve
from sim.kv.prefix_cache import BlockCache, PrefixCache, block_runs, cacheable_blocks, private_key
from sim.result import READBACK, RECOMPUTE, SWAP
from sim.validate import check_int, check_number

PREEMPTION = ("recompute", "swap")
POLICIES = ("fcfs", "priority")         # vLLM's SchedulerConfig.policy


@dataclass(frozen=True)
class Reserve:
    """The handbook's rule: reserve input_len + output_len tokens at admission, never preempt."""

    name = "reserve"


@dataclass(frozen=True)
class Paged:
    """KV in blocks of ``block_size`` tokens, preempting the most recently admitted when short
    (vLLM V1's rule: see the module docstring for what is modelled).

    block_size  tokens per block, a whole number >= 1 (vLLM's default 16)
    watermark   fraction of all blocks that admission leaves free while other requests run, in
                [0, 1) (vLLM V1's default 0.0; V0 used 0.01 on every admission)
    preemption  "recompute" (drop the KV, prefill again) or "swap" (copy it to host memory)
    swap_gbs    GB/s of the host link used by swap (required for "swap")
    policy      "fcfs" (vLLM's default) or "priority" (vLLM's ``--scheduling-policy priority``):
                the waiting queue is ordered by (request priority, arrival), smaller first, and
                the preemption victim is the running request with the largest (priority,
                arrival); requests carry ``priority`` (an int, smaller = more urgent, default 0)
    """

    block_size: int = 16
    watermark: float = 0.0
    preemption: str = "recompute"
    swap_gbs: float | None = None
    policy: str = "fcfs"
    name = "paged"

    def __post_init__(self):
        check_int("Paged.block_size", self.block_size, 1)
        check_number("Paged.watermark", self.watermark, 0, strict=False, note="(fraction of blocks, < 1)")
        if not self.watermark < 1:
            raise ValueError(f"Paged.watermark must be in [0, 1), got {self.watermark!r}")
        if self.preemption not in PREEMPTION:
            raise ValueError(f"Paged.preemption must be one of {PREEMPTION}, got {self.preemption!r}")
        if self.preemption == "swap" or self.swap_gbs is not None:
            if self.swap_gbs is None:
                raise ValueError("Paged.swap_gbs must be given (> 0 GB/s) for preemption='swap'")
            check_number("Paged.swap_gbs", self.swap_gbs, 0, note="(GB/s)")
        if self.policy not in POLICIES:
            raise ValueError(f"Paged.policy must be one of {POLICIES}, got {self.policy!r}")
        if self.policy == "priority" and self.preemption == "swap":
            raise ValueError("Paged.policy='priority' needs preemption='recompute' (vLLM V1's priority "
                             "scheduler; swap is V0's)")


KV_POLICIES = {"reserve": Reserve, "paged": Paged, "ratio": RatioReserve}


def as_kv_policy(value):
    """``Setup.kv``: None (the handbook's reservation), a name in ``KV_POLICIES`` or a policy object."""
    if value is None or isinstance(value, (Paged, RatioReserve)):
        return value
    if isinstance(value, Reserve):
        return None
    if isinstance(value, str) and value in KV_POLICIES:
        return as_kv_policy(KV_POLICIES[value]())
    raise ValueError(f"Setup.kv must be None, one of {sorted(KV_POLICIES)} or a sim.kv policy, got {value!r}")


class BlockManager:
    """The blocks of one instance: counts of plain free blocks (the unnamed head of vLLM's free
    queue), decoders per phase, and the prefix cache's named copies (its tail, ``BlockCache``).
    The engine calls ``admit``, ``allocate_to`` (a chunk's blocks, named as they are scheduled),
    ``start_decoding``/``stop_decoding``, ``need``/``fit_steps``/``grow`` and ``release``."""

    def __init__(self, setup):
        policy: Paged = setup.kv
        B = self.B = policy.block_size
        self.num_blocks = setup.kv_capacity_tokens // B
        self.watermark = int(policy.watermark * self.num_blocks)
        self.plain = self.num_blocks                 # free blocks holding nothing worth keeping
        self.cnt = [0] * B                           # decoders per phase (L - step) mod B
        self.decoders = 0
        self.phase: dict[int, int] = {}
        self.base: dict[int, int] = {}               # blocks allocated for the prompt
        # Prefix caching (vLLM V1's naming): a request's blocks [0, upto) are named, as the pieces
        # it holds (hits, then its own copies, named as its chunks are scheduled); a decoder's
        # blocks in a prefix segment are named as they fill, lazily: ``pending`` holds, per key,
        # records [request, seq, from step, kv tokens then, next block, end] from which the step
        # naming each block follows, applied (``_materialize``) before anything reads that key.
        # Its private blocks are named when it releases its KV (only it can hit them, later).
        self.held: dict[int, list] = {}
        self.upto: dict[int, int] = {}
        self.names: dict[int, tuple] = {}            # request -> (prefix, blocks a segment covers)
        self.pending: dict = {}
        self.dec_pending: dict[int, list] = {}       # request -> its (key, record) pairs
        self.seq: dict[int, int] = {}                # admission order (vLLM's ``running`` order)
        self.admissions = 0
        self.now_step = -1                           # the last step whose decoders were scheduled
        # With speculative decoding a decoder's KV does not grow one token a step: its blocks are
        # named at its release (not V1's rule; vLLM names them as they fill).
        self.spec = setup.speculative is not None
        cfg: PrefixCache | None = setup.prefix_cache
        self.cache = BlockCache(cfg, B, setup.kv_bytes_per_token, setup) if cfg is not None else None
        self.releases = 0                            # KV releases so far (they can unblock the head)
        self.blocked = None                          # (request, prompt, releases, free): the head last refused
        self.swap_s_per_token = (setup.kv_bytes_per_token / (policy.swap_gbs * 1e9)
                                 if policy.preemption == "swap" else 0.0)

    def free_blocks(self) -> int:
        return self.plain + (self.cache.lru.size if self.cache is not None else 0)

    def _allocate(self, n: int) -> None:
        plain = self.plain
        if n <= plain:                               # the usual case: plain blocks suffice
            self.plain = plain - n
            return
        self.plain = 0
        self.cache.evict(n - plain)

    def _lookup(self, r: int, prompt: int, prefix):
        """(hit pieces, hit blocks, of which on the host, hits now free, first name missed)."""
        B, cache = self.B, self.cache
        if cache is None:
            return (), 0, 0, 0, None
        last = (prompt - 1) // B                     # the last prompt token is always computed
        c = cacheable_blocks(prefix, B)
        runs = block_runs(prefix, last if last < c else c, B) if c else []
        if last > c:                                 # its own private blocks (after a preemption)
            runs.append((private_key(r), c, last))
        if self.pending:
            self._materialize_runs(runs)
        return cache.lookup(runs)

    def _materialize_runs(self, runs) -> None:
        pending, u = self.pending, self.now_step
        for key, _, _ in runs:
            if key in pending:
                self._materialize(key, u)

    def _materialize(self, key, u: int) -> None:
        """Name the blocks of ``key`` that decoders filled by the end of step ``u``, in the order
        vLLM names them: by step, then running order."""
        recs, B, cache, held, upto = self.pending[key], self.B, self.cache, self.held, self.upto
        if len(recs) == 1:
            rec = recs[0]
            due = (rec[3] + u - rec[2] + 1) // B
            if due > rec[5]:
                due = rec[5]
            if due > rec[4]:
                r = rec[0]
                _hold(held[r], cache.name(key, rec[4], due, held[r][-1] if held[r] else None))
                rec[4] = due
                if due > upto[r]:
                    upto[r] = due
            if due >= rec[5]:
                del self.pending[key]
            return
        else:
            events = []
            for rec in recs:
                r, seq, s0, L0, nxt, end = rec
                due = min(end, (L0 + u - s0 + 1) // B)
                events += [(s0 + (j + 1) * B - 1 - L0, seq, j, rec) for j in range(nxt, due)]
            events.sort(key=lambda e: (e[0], e[1]))
            i = 0
            while i < len(events):
                _, _, lo, rec = events[i]
                hi = lo + 1
                i += 1
                while i < len(events) and events[i][3] is rec and events[i][2] == hi:
                    hi += 1
                    i += 1
                r = rec[0]
                _hold(held[r], cache.name(key, lo, hi, held[r][-1] if held[r] else None))
                rec[4] = hi
                if hi > upto[r]:
                    upto[r] = hi
        if any(rec[4] >= rec[5] for rec in recs):
            recs[:] = [rec for rec in recs if rec[4] < rec[5]]
            if not recs:
                del self.pending[key]

    def _name_to(self, r: int, full: int) -> None:
        """Name ``r``'s blocks up to ``full`` that a prefix segment covers (as they are scheduled)."""
        up = self.upto[r]
        prefix, c = self.names[r]
        stop = full if full < c else c
        if stop <= up:
            return
        pending, cache, held, B = self.pending, self.cache, self.held[r], self.B
        j = 0
        for key, end in prefix:                      # block_runs(prefix, stop), from block up
            e = end // B
            if e > stop:
                e = stop
            if e > j:
                if e > up:
                    if key in pending:               # decoders named theirs earlier in the step
                        self._materialize(key, self.now_step)
                    _hold(held, cache.name(key, j if j > up else up, e, held[-1] if held else None))
                j = e
            if j >= stop:
                break
        self.upto[r] = stop

    def quiet_cap(self, step: int, k: int) -> int:
        """Steps from ``step`` before a decoder names the block the refused head missed (that step
        must be an event step: the head's lookup may hit it there)."""
        b = self.blocked
        if b is None or b[4] is None or not self.pending:
            return k
        key, j = b[4]
        for rec in self.pending.get(key, ()):
            if rec[4] <= j < rec[5]:
                s = rec[2] + (j + 1) * self.B - 1 - rec[3]
                if s - step < k:
                    k = s - step if s > step else 0
        return k

    def refused(self, r: int, prompt: int) -> bool:
        """Whether ``admit`` of this head is sure to fail again: it failed, and since then no KV was
        released and no block freed (allocations and evictions only shrink what fits and what hits)."""
        b = self.blocked
        return (b is not None and b[0] == r and b[1] == prompt and b[2] == self.releases
                and self.free_blocks() <= b[3])

    def admit(self, r: int, prompt: int, prefix, *, spare: bool = True,
              whole: bool = True) -> tuple[int, int] | None:
        """Admit a prompt of ``prompt`` tokens after a prefix lookup: (cached tokens, of which read
        back from the host), or None when its blocks (less the hits) and, with ``spare``, the
        watermark do not fit. ``whole``: allocate every prompt block now; else only the hits (the
        engine then allocates chunk by chunk, ``allocate_to``, as vLLM V1 does)."""
        B = self.B
        blocks = -(-prompt // B)
        pieces, hit, on_host, free_hits, miss = self._lookup(r, prompt, prefix)
        new = blocks - hit + on_host                  # host hits need GPU blocks too
        if self.free_blocks() - free_hits - new < (self.watermark if spare else 0):
            self.blocked = (r, prompt, self.releases, self.free_blocks(), miss)
            return None
        if self.cache is not None:
            if hit:
                self.cache.take(pieces)
            self.held[r] = pieces
            self.upto[r] = hit
            self.names[r] = (prefix, cacheable_blocks(prefix, B))
        if whole:
            self._allocate(new)
            self.base[r] = blocks
        else:
            self._allocate(on_host)
            self.base[r] = hit
        return hit * B, on_host * B

    def admit_blocks(self, r: int, tokens: int, *, spare: bool = True, need: int | None = None) -> bool:
        """Blocks for KV that arrives whole (swapped back in, or a PD transfer): ``tokens``; the
        check is for ``need`` tokens (default ``tokens``) and, with ``spare``, the watermark."""
        new = -(-tokens // self.B)
        check = new if need is None else -(-need // self.B)
        if self.free_blocks() - check < (self.watermark if spare else 0):
            return False
        self._allocate(new)
        self.base[r] = new
        return True

    def blocks_to(self, r: int, tokens: int) -> int:
        """New blocks ``r`` needs for its KV to hold ``tokens`` (prompt chunks)."""
        return max(0, -(-tokens // self.B) - self.base[r])

    def allocate_to(self, r: int, tokens: int) -> None:
        """Allocate them (they fit: ``blocks_to(r, tokens) <= free_blocks()``)."""
        n = self.blocks_to(r, tokens)
        if n:
            self._allocate(n)
            self.base[r] += n
        if self.names and r in self.names:
            self._name_to(r, tokens // self.B)

    def start_decoding(self, r: int, kv_tokens: int, step: int) -> None:
        """From ``step`` on, ``r`` computes one token a step over ``kv_tokens`` (then +1 a step)."""
        ph = (kv_tokens - step) % self.B
        self.cnt[ph] += 1
        self.phase[r] = ph
        self.decoders += 1
        names = self.names.get(r) if self.names else None
        if names is not None and self.upto[r] < names[1] and not self.spec:   # a segment covers output
            up, recs, pending, B, j = self.upto[r], [], self.pending, self.B, 0
            prefix = names[0]
            if len(prefix) == 1 or prefix[-2][1] // B <= up:    # all in the last segment (usual)
                key = prefix[-1][0]
                rec = [r, self.seq[r], step, kv_tokens, up, names[1]]
                if key in pending:
                    pending[key].append(rec)
                else:
                    pending[key] = [rec]
                self.dec_pending[r] = [(key, rec)]
                return
            for key, end in prefix:
                e = end // B
                if e > j:
                    if e > up:
                        rec = [r, self.seq[r], step, kv_tokens, j if j > up else up, e]
                        if key in pending:
                            pending[key].append(rec)
                        else:
                            pending[key] = [rec]
                        recs.append((key, rec))
                    j = e
            self.dec_pending[r] = recs

    def stop_decoding(self, r: int) -> None:
        self.cnt[self.phase.pop(r)] -= 1
        self.decoders -= 1

    def need(self, step: int) -> int:
        """New blocks the decoders need in ``step``."""
        return self.cnt[-step % self.B]

    def _needs(self, step: int, k: int) -> int:
        B = self.B
        full, part = divmod(k, B)
        total = full * self.decoders
        if part:                                     # phases -step, -step-1, ... (mod B): one or two slices
            cnt, a = self.cnt, -step % B
            lo = a - part + 1
            if lo >= 0:
                total += sum(cnt[lo:a + 1])
            else:
                total += sum(cnt[:a + 1]) + sum(cnt[B + lo:])
        return total

    def fit_steps(self, step: int, k: int) -> int:
        """How many of the ``k`` decode-only steps from ``step`` get their blocks without preempting."""
        free = self.free_blocks()
        D = self.decoders
        if D * (-(-k // self.B)) <= free:
            return k
        cycles = free // D                          # each B steps take one block per decoder
        j = cycles * self.B
        used = cycles * D
        cnt, B = self.cnt, self.B
        while j < k:
            used += cnt[-(step + j) % B]
            if used > free:
                return j
            j += 1
        return k

    def grow(self, step: int, k: int) -> None:
        """Hand out the blocks of ``k`` decode-only steps from ``step`` (they fit: ``fit_steps``)."""
        n = self._needs(step, k)
        if n:
            self._allocate(n)

    def take_step_blocks(self, n: int) -> None:
        self._allocate(n)

    def release(self, r: int, computed: int, prefix) -> None:
        """``r`` lets go of its KV, ``computed`` tokens of it written (finish or preemption)."""
        B = self.B
        self.releases += 1
        total = max(self.base.pop(r), -(-computed // B))
        cache = self.cache
        if cache is None:
            self.plain += total
            return
        pending = self.pending
        for key, rec in self.dec_pending.pop(r, ()):   # a decoder: its namings up to now
            recs = pending.get(key)
            if recs is not None and len(recs) == 1 and recs[0] is rec:
                due = (rec[3] + self.now_step - rec[2] + 1) // B     # _materialize's one-record case
                if due > rec[5]:
                    due = rec[5]
                if due > rec[4]:
                    mine = self.held[r]
                    _hold(mine, cache.name(key, rec[4], due, mine[-1] if mine else None))
                    if due > self.upto[r]:
                        self.upto[r] = due
                del pending[key]
            elif recs is not None and rec in recs:
                self._materialize(key, self.now_step)
                if rec in recs:
                    recs.remove(rec)
                    if not recs:
                        del self.pending[key]
        held = self.held.pop(r, None)
        if held is None:                             # KV that arrived whole (swap, PD): named now
            held, up = [], 0
        else:
            up = self.upto.pop(r)
            del self.names[r]
        full = computed // B
        if up < full:                                # named at release: the rest of its full blocks
            c = cacheable_blocks(prefix, B)
            stop = full if full < c else c
            if up < stop:
                runs = [(key, lo if lo > up else up, hi) for key, lo, hi in block_runs(prefix, stop, B) if hi > up]
                if self.pending:
                    self._materialize_runs(runs)
                held += [cache.name(*run) for run in runs]
                up = stop
            if up < full:                            # private: no segment covers them
                held.append(cache.name(private_key(r), up, full))
                up = full
        if len(held) > 1:
            held.sort(key=_piece_start)
        cache.release(held)
        self.plain += max(total, up) - up

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        """Tokens of a prompt a lookup would find on the GPU now (for a prefix-aware router)."""
        if self.cache is None or not prefix:
            return 0
        B = self.B
        runs = block_runs(prefix, min(cacheable_blocks(prefix, B), (input_len - 1) // B), B)
        if self.pending:
            self._materialize_runs(runs)
        return self.cache.cached_prefix(runs) * B


def _piece_start(piece) -> int:
    return piece[2]


def _hold(held: list, piece) -> None:
    """Add a request's new piece to its held pieces (in place of its last one, if it extends it)."""
    if held and held[-1][0] is piece[0] and held[-1][2] == piece[2]:
        held[-1] = piece
    else:
        held.append(piece)


class PagedManager:
    """``Paged`` as the engine's KV manager (``sim.kv.manager``): blocks through ``BlockManager``,
    plus what the scheduler must not know: the watermark and prefix-lookup admission, the victim
    when the decoders' blocks run short (the most recently admitted running request, vLLM's
    ``running`` tail), and the swap and read-back seconds."""

    preempts = True

    def __init__(self, setup):
        self.blocks = BlockManager(setup)
        self.B = self.blocks.B
        self.swap_s_per_token = self.blocks.swap_s_per_token
        self.swapped: dict[int, bool] = {}      # swap: request -> whether it was decoding
        self.extra, self.flags = 0.0, 0
        self.by_priority = setup.kv.policy == "priority"
        # Speculative decoding: V1 allocates k lookahead slots beyond every scheduled chunk; a
        # decoder's tokens per step are drawn (sim.speculative), so its new blocks are planned
        # per step from its draws (``plan_speculation``) instead of by block phase.
        spec = setup.speculative
        self.lookahead = spec.k if spec is not None else 0
        self.spec_need: dict[int, int] = {}     # step -> new blocks the speculating decoders take
        self.spec_plans: dict[int, tuple] = {}  # decoder -> (first decode step, blocks held after each)
        self.taken_through = -1                 # the last step whose decoders' blocks were taken
        self.cuts: dict[int, int] = {}          # decoder -> tokens, where the budget cut its drafts this step

    # --- admission ------------------------------------------------------------------------------

    def head_fits(self, inst, r: int) -> bool:
        blocks = self.blocks
        spare = inst.running > 0
        if r in self.swapped:
            return self._whole_fits(inst.computed[r] + 1 if self.swapped[r] else inst.target[r], spare)
        if inst.pre[r]:
            return self._whole_fits(inst.inp[r] + 1, spare)
        # A prefix lookup costs as much as the admission's own: an event step tries it instead
        # (an event step of decoders only is the quiet run's arithmetic), unless it just failed.
        return not blocks.refused(r, inst.target[r])

    def _whole_fits(self, tokens: int, spare: bool) -> bool:
        blocks = self.blocks
        return blocks.free_blocks() - (-(-tokens // self.B)) >= (blocks.watermark if spare else 0)

    def admit(self, inst, r: int):
        """vLLM V1's admission: the whole sequence's blocks (less prefix hits) must fit, with the
        watermark spare only while other requests run; only the hits are taken here, the first
        chunk's blocks come from ``allocate_chunk``."""
        got = self._admit(inst, r)
        if got is not None:
            blocks = self.blocks
            blocks.seq[r] = blocks.admissions         # its place in the running order
            blocks.admissions += 1
        return got

    def release_order(self, requests) -> list:
        """Requests finishing in one step, in the order their KV is released (vLLM's running order:
        it sets the order of their blocks in the free queue)."""
        return sorted(requests, key=self.blocks.seq.__getitem__)

    def _admit(self, inst, r: int):
        blocks = self.blocks
        spare = inst.running > 0
        if r in self.swapped:                         # its KV comes back from host memory
            decoding = self.swapped[r]
            computed = inst.computed[r]
            if decoding:
                if not blocks.admit_blocks(r, computed + 1, spare=spare):
                    return None
            elif not blocks.admit_blocks(r, computed, spare=spare, need=inst.target[r]):
                return None
            del self.swapped[r]
            self.extra += computed * self.swap_s_per_token
            self.flags |= SWAP
            return RESUME if decoding else computed
        if inst.pre[r]:                               # its prompt's KV and its first token's
            return 0 if blocks.admit_blocks(r, inst.inp[r] + 1, spare=spare) else None
        prompt = inst.target[r]
        got = blocks.admit(r, prompt, inst.prefix[r], spare=spare, whole=False)
        if got is None:
            return None
        cached, host = got
        stats = inst.stats
        stats["cached_tokens"][r] += cached
        stats["prompt_tokens"][r] += prompt
        if host:
            stats["host_tokens"][r] += host
            self.extra += host // self.B * blocks.cache.readback_s
            self.flags |= READBACK
        if inst.stats["preemptions"][r]:              # the head came back from a preemption
            self.flags |= RECOMPUTE
        return cached

    # --- the step's blocks and preemption ---------------------------------------------------

    def allocate_step(self, inst, step: int):
        """The decoders' new blocks this step, preempting the victim while they do not fit.
        Returns None, or (priority) the decoders the running pass did not reach."""
        blocks = self.blocks
        if self.lookahead:
            return self._allocate_speculative(inst, step)
        need = blocks.cnt[-step % blocks.B]           # blocks.need(step)
        if need <= blocks.plain:                      # the usual case: plain free blocks suffice
            blocks.plain -= need
            blocks.now_step = step
            return None
        if self.by_priority and need > blocks.free_blocks():
            return self._allocate_in_order(inst, step)[0]
        blocks.now_step = step - 1
        taken = 0
        if need > blocks.free_blocks():
            # vLLM V1 allocates decoder by decoder: those before the first that fails take every
            # free block (evicting cached ones) before any victim's blocks are freed
            taken = blocks.free_blocks()
            blocks.take_step_blocks(taken)
        while need - taken > blocks.free_blocks():
            self._preempt(inst, self.victim(inst))
            need = blocks.need(step)
        blocks.take_step_blocks(max(0, need - taken))
        blocks.now_step = step
        return None

    def _allocate_in_order(self, inst, step: int, need_of=None):
        """vLLM's running pass over the decoders, one at a time (priority: the victim may be one
        already given its block this step, which it hands back; a decoder that is the victim
        itself ends the pass, and the decoders after it get nothing this step). With FCFS the
        victims come from the tail, so the aggregate loop above gives the same result.
        ``need_of(r)``: a decoder's new blocks this step (default: by its block phase). Takes the
        blocks; returns (the decoders not reached or None, the blocks taken)."""
        blocks, phase = self.blocks, self.blocks.phase
        due = -step % self.B                          # the phase whose decoders need a block now
        decoders = [r for r in inst.run_order if r in inst.fstep]   # the head of the running order
        taken, took, stalled = 0, {}, None
        for i, r in enumerate(decoders):
            if r not in inst.run_order:               # preempted earlier in this pass
                continue
            n = need_of(r) if need_of is not None else (1 if phase[r] == due else 0)
            while n > blocks.free_blocks() - taken:
                victim = self.victim(inst)
                self._preempt(inst, victim)
                taken -= took.pop(victim, 0)
                if victim == r:
                    stalled = [q for q in decoders[i + 1:] if q in inst.run_order]
                    break
            if stalled is not None:
                break
            took[r] = n
            taken += n
        blocks.take_step_blocks(taken)
        return stalled, taken

    def _allocate_speculative(self, inst, step: int):
        """The speculating decoders' blocks this step (planned from their draws), preempting
        the victim while they do not fit (FCFS: the tail, so all at once is V1's pass), unless
        the budget cuts a decoder's drafts or priority picks victims anywhere: then one at a time."""
        blocks, plan = self.blocks, self.spec_need
        self.taken_through = step - 1
        self.cuts = {}
        if (inst.decoders * (self.lookahead + 1) > inst.setup.max_num_batched_tokens
                or self.by_priority and plan.get(step, 0) > blocks.free_blocks()):
            stalled = self._speculative_pass(inst, step)
            self.taken_through = step
            return stalled
        while plan.get(step, 0) > blocks.free_blocks():
            self._preempt(inst, self.victim(inst))
        blocks.take_step_blocks(plan.pop(step, 0))
        self.taken_through = step
        return None

    def _speculative_pass(self, inst, step: int):
        """V1's running pass over the speculating decoders, one at a time: each asks
        min(1 + k, budget) tokens (fewer: n - 1 drafts, ``cuts``), its blocks for them plus the
        lookahead, preempting the victim while they do not fit (a victim reached earlier hands its
        tokens back; one that is the decoder itself ends the pass). Returns the decoders the pass
        did not reach (the budget ran out, or it ended), or None."""
        blocks, plan, k1 = self.blocks, self.spec_need, self.lookahead + 1
        budget = inst.setup.max_num_batched_tokens
        decoders = [r for r in inst.run_order if r in inst.fstep]   # the head of the running order
        taken, took, asked, stalled = 0, {}, {}, None
        for i, r in enumerate(decoders):
            if r not in inst.run_order:               # preempted earlier in this pass
                continue
            if budget <= 0:
                stalled = [q for q in decoders[i:] if q in inst.run_order]
                break
            n = k1 if budget >= k1 else budget
            need = self._step_need(r, step, k1 - n)
            while need > blocks.free_blocks() - taken:
                victim = self.victim(inst)
                self._preempt(inst, victim)
                taken -= took.pop(victim, 0)
                budget += asked.pop(victim, 0)
                if victim == r:
                    stalled = [q for q in decoders[i + 1:] if q in inst.run_order]
                    break
            if stalled is not None:
                break
            took[r] = need
            taken += need
            asked[r] = n
            budget -= n
        blocks.take_step_blocks(taken)
        self.cuts = {r: n for r, n in asked.items() if n < k1}
        plan.pop(step, None)                          # taken; the decoders not reached keep theirs
        left = sum(self._step_need(q, step) for q in stalled) if stalled else 0
        if left:
            plan[step] = left
        return stalled

    def _step_need(self, r: int, step: int, short: int = 0) -> int:
        """A speculating decoder's new blocks in ``step`` (from its plan), ``short`` drafts fewer."""
        from_step, cum, toks = self.spec_plans[r]
        j = step - from_step
        prev = cum[j - 1] if j > 0 else self.blocks.base[r]
        if not short:
            return cum[j] - prev
        return max(0, -(-(toks[j] + 2 * self.lookahead - short) // self.B) - prev)

    def plan_speculation(self, r: int, kv_tokens: int, from_step: int, emits: list) -> None:
        """``r`` decodes from ``from_step`` with its KV holding ``kv_tokens``, emitting ``emits``
        tokens per step. Each step V1 holds slots for its known tokens, its k drafts and k
        lookahead: ``ceil((num_tokens + 2k) / B)`` blocks, num_tokens growing by the emissions."""
        self.spec_plans[r] = (from_step, [], [])
        self._plan(r, from_step, self.blocks.base[r], kv_tokens + 1, emits)

    def _plan(self, r: int, step: int, held: int, tokens: int, emits) -> None:
        """Append the plan of ``r``'s decode steps from ``step`` on: ``tokens`` known, ``held``
        blocks before it, ``emits`` tokens emitted at each step."""
        B, two_k, need = self.B, 2 * self.lookahead, self.spec_need
        _, cum, toks = self.spec_plans[r]
        for j, e in enumerate(emits):
            want = -(-(tokens + two_k) // B)
            if want > held:
                need[step + j] = need.get(step + j, 0) + want - held
                held = want
            cum.append(held)
            toks.append(tokens)
            tokens += e

    def replan_speculation(self, r: int, step: int, n: int, emits: list) -> None:
        """The budget cut ``r`` to ``n`` tokens in ``step`` (its blocks for them taken) and its
        draws from ``step`` on are now ``emits``: its later steps are planned again."""
        from_step, cum, toks = self.spec_plans[r]
        j = step - from_step
        need = self.spec_need
        for jj in range(j + 1, len(cum)):
            if cum[jj] > cum[jj - 1]:
                need[from_step + jj] -= cum[jj] - cum[jj - 1]
        prev = cum[j - 1] if j > 0 else self.blocks.base[r]
        held = max(prev, -(-(toks[j] + 2 * self.lookahead - (self.lookahead + 1 - n)) // self.B))
        tokens = toks[j] + emits[0]
        del cum[j:], toks[j + 1:]
        cum.append(held)
        self._plan(r, step + 1, held, tokens, emits[1:])

    def _end_speculation(self, r: int) -> None:
        """``r`` stops decoding (finish or preemption): the blocks of steps not yet taken are
        unplanned, and what it holds is what its release frees."""
        from_step, cum, _ = self.spec_plans.pop(r)
        blocks, need = self.blocks, self.spec_need
        ran = self.taken_through + 1 - from_step      # its decode steps whose blocks were taken
        prev = cum[ran - 1] if ran > 0 else blocks.base[r]
        held = prev
        for j in range(max(ran, 0), len(cum)):
            if cum[j] > prev:
                need[from_step + j] -= cum[j] - prev
            prev = cum[j]
        blocks.base[r] = held

    def lookahead_fits(self, inst, r: int, tokens: int) -> bool:
        """Speculative: whether the admission chunk of ``tokens`` plus the lookahead slots fits,
        with the watermark spare while others run (V1 checks it beside the whole sequence)."""
        blocks = self.blocks
        spare = blocks.watermark if inst.running > 0 else 0
        return -(-(tokens + self.lookahead) // self.B) + spare <= blocks.free_blocks()

    def stall(self, r: int) -> None:
        """``r`` decodes nothing this step: its KV reaches each block boundary a step later."""
        blocks = self.blocks
        if self.lookahead:                            # its planned steps from this one move on by one
            from_step, cum, toks = self.spec_plans[r]
            need, base = self.spec_need, blocks.base[r]
            moves = []
            for j in range(self.taken_through - from_step, len(cum)):
                d = cum[j] - (cum[j - 1] if j > 0 else base)
                if d:
                    need[from_step + j] -= d
                    moves.append((from_step + j + 1, d))
            for s, d in moves:
                need[s] = need.get(s, 0) + d
            self.spec_plans[r] = (from_step + 1, cum, toks)
            return
        ph = blocks.phase[r]
        blocks.cnt[ph] -= 1
        ph = (ph - 1) % self.B
        blocks.cnt[ph] += 1
        blocks.phase[r] = ph

    def allocate_chunk(self, inst, r: int, tokens: int) -> bool:
        """Blocks for ``r``'s prompt chunk, its KV to hold ``tokens``; while they do not fit, the
        victim is preempted (vLLM V1's running pass). False if ``r`` itself was."""
        blocks = self.blocks
        tokens += self.lookahead                      # V1's lookahead slots (speculative decoding)
        while blocks.blocks_to(r, tokens) > blocks.free_blocks():
            victim = self.victim(inst)
            self._preempt(inst, victim)
            if victim == r:
                return False
        blocks.allocate_to(r, tokens)
        return True

    def victim(self, inst) -> int:
        """FCFS: the most recently admitted running request (V1's ``running`` tail). Priority: the
        running request with the largest (priority, arrival), the first in admission order on a tie."""
        if not self.by_priority:
            return next(reversed(inst.run_order))
        prio, arr = inst.prio, inst.arr
        best, key = -1, None
        for r in inst.run_order:
            k = (prio[r], arr[r])
            if key is None or k > key:
                best, key = r, k
        return best

    def _preempt(self, inst, r: int) -> None:
        computed, generated = inst.preempt(r)
        self.blocks.release(r, computed, inst.prefix[r])
        if self.swap_s_per_token:                     # its KV goes to host memory, progress kept
            self.extra += computed * self.swap_s_per_token
            self.flags |= SWAP
            self.swapped[r] = generated >= 1
            inst.computed[r] = computed
        else:                                         # recompute: its progress is dropped
            inst.computed[r] = 0
            if generated >= 1:                        # prefill prompt + generated tokens again
                inst.target[r] = inst.inp[r] + generated
                inst.pre[r] = 0                       # (a PD arrival's prompt KV is gone too)

    def quiet_steps(self, step: int, k: int) -> int:
        blocks = self.blocks
        k = blocks.fit_steps(step, k)
        return blocks.quiet_cap(step, k) if blocks.pending and blocks.blocked is not None else k

    def grow(self, step: int, k: int) -> None:
        blocks = self.blocks
        n = blocks._needs(step, k)                    # blocks.grow, inlined (called every quiet run)
        if n:
            blocks._allocate(n)
        blocks.now_step = step + k - 1

    def start_decoding(self, r: int, kv_tokens: int, step: int) -> None:
        if not self.lookahead:                        # (speculating: plan_speculation)
            self.blocks.start_decoding(r, kv_tokens, step)

    def stop_decoding(self, r: int) -> None:
        if self.lookahead:
            self._end_speculation(r)
        else:
            self.blocks.stop_decoding(r)

    # --- finishes, and what a router asks ---------------------------------------------------

    def free(self, inst, r: int) -> None:
        self.blocks.release(r, inst.inp[r] + inst.out[r] - 1, inst.prefix[r])
        del self.blocks.seq[r]

    def free_tokens(self, pending: int) -> int:
        """Free blocks now, in tokens (cached ones count as free)."""
        return self.blocks.free_blocks() * self.B

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        return self.blocks.cached_prefix_tokens(prefix, input_len)
