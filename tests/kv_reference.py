"""A plain reference for the memory features (sim/kv, sim/speculative), written to be obviously
right rather than fast: one object per request, one block id per block, every running request
touched at every step. The rules are the ones documented in sim/kv/paged.py,
sim/kv/prefix_cache.py and sim/speculative.py:

- running requests in admission order; decoders take 1 token (k + 1 when speculating), prompts
  then take chunks while the budget lasts; then the queue's head is admitted while it fits;
- paged: decoders in order, each whose blocks are full takes one; while none is free, the last
  admitted running request is preempted (to the queue's head; recompute or swap), and the pass
  ends if that is the decoder itself. Blocks come from one free queue (vLLM V1's): unnamed freed
  blocks at its head, named ones at its tail, allocation from the head evicting a named block
  there (to the host tier, if any). No admission in a step that preempted. Admission takes the
  prompt's blocks after a prefix lookup, and leaves the watermark free;
- prefix caching as vLLM V1 names blocks (the Pool below): every full block is named the step it
  is scheduled (a shared name from the prefix segments, else one private to the request), a block
  computed twice is a second copy and a hit takes the first; KV that arrived whole (swap-in, PD)
  is named at its release. The host tier keeps evicted shared names whose last GPU copy left;
- the step lasts step_time(tokens, context, pairs, decoders) plus swap, read-back and draft seconds.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from sim.kv.prefix_cache import KEY_SHIFT


@dataclass
class KReq:
    id: int
    arrival: float
    input_len: int
    output_len: int
    prefix: tuple | None
    prefilled: bool
    prompt: int = 0               # this attempt's prompt (input_len + generated after a recompute)
    gen0: int = 0                 # tokens generated before this attempt
    prompt_done: int = 0
    generated: int = 0
    computed: int = 0             # tokens whose KV is written
    blocks: list = field(default_factory=list)
    named: int = 0                # blocks[:named] carry their name
    whole: bool = False           # its KV arrived whole (swap, PD): named only at its release
    swapped: bool = False
    first_token: float | None = None
    finish: float | None = None
    preemptions: int = 0
    cached: int = 0
    host: int = 0
    spec_steps: int = 0
    rng: object = None

    def decoding(self):
        return self.prompt_done == self.prompt

    def contribution(self):
        return self.prompt_done + self.generated - self.gen0


def name(prefix, j, B, request=None):
    """Block j's name: the first segment covering all of it, else private to ``request`` (None:
    without a request, such a block has no name)."""
    for key, end in prefix or ():
        if end >= (j + 1) * B:
            return (key << KEY_SHIFT) | j
    return None if request is None else ("private", request, j)


class Pool:
    """vLLM V1's block pool (as tests/vllm_reference.py) plus this simulator's host tier: ref
    counts, a name per block, name -> its copies (first named first), one free queue (unnamed
    freed blocks at its head, named ones at its tail, allocation from the head evicting), and the
    host LRU of names: an evicted copy that was its shared name's last on the GPU goes there
    (private ones are dropped); naming a block drops its name from the host (exclusive tiers)."""

    def __init__(self, setup):
        kv, pc = setup.kv, setup.prefix_cache
        self.B = kv.block_size
        self.n = setup.kv_capacity_tokens // self.B
        self.watermark = int(kv.watermark * self.n)
        self.caching = pc is not None
        self.queue = OrderedDict((b, None) for b in range(self.n))     # the free queue, head first
        self.ref = [0] * self.n
        self.hash = [None] * self.n
        self.cached = {}                  # name -> {block id: None}, first named first
        self.host = OrderedDict()         # name -> None, oldest first
        self.host_cap = pc.host_tokens // self.B if pc is not None else 0

    def free(self):
        return len(self.queue)

    def first_copy(self, h):
        ids = self.cached.get(h)
        return next(iter(ids)) if ids else None

    def alloc(self):
        b, _ = self.queue.popitem(last=False)
        h = self.hash[b]
        if h is not None:                 # evict the oldest free block's copy
            del self.cached[h][b]
            if not self.cached[h]:
                del self.cached[h]
                if self.host_cap and not isinstance(h, tuple):
                    self.host[h] = None
                    if len(self.host) > self.host_cap:
                        self.host.popitem(last=False)
            self.hash[b] = None
        self.ref[b] = 1
        return b

    def touch(self, b):
        if self.ref[b] == 0:
            del self.queue[b]
        self.ref[b] += 1

    def name_blocks(self, r, full):
        """Name r's blocks [named, full) (vLLM's cache_full_blocks, when they are scheduled)."""
        if not self.caching:
            return
        for j in range(r.named, full):
            b = r.blocks[j]
            if self.hash[b] is None:
                h = name(r.prefix, j, self.B, r.id)
                self.hash[b] = h
                self.cached.setdefault(h, {})[b] = None
                self.host.pop(h, None)
        r.named = max(r.named, full)

    def release(self, r, use_cache):
        """r lets go of its blocks, last first (its full blocks not named yet are named now: KV
        that arrived whole)."""
        if use_cache:
            self.name_blocks(r, r.computed // self.B)
        unnamed = []
        for b in reversed(r.blocks):
            self.ref[b] -= 1
            if self.ref[b] == 0:
                if self.hash[b] is None:
                    unnamed.append(b)
                else:
                    self.queue[b] = None
        for b in reversed(unnamed):
            self.queue[b] = None
            self.queue.move_to_end(b, last=False)
        r.blocks = []
        r.named = 0


def plain_kv_run(setup, arrivals, inputs, outputs, prefixes=None, prefilled=None):
    n = len(arrivals)
    prefixes = prefixes or [None] * n
    prefilled = prefilled or [False] * n
    reqs = [KReq(i, a, inp, o, p, pf) for i, (a, inp, o, p, pf)
            in enumerate(zip(arrivals, inputs, outputs, prefixes, prefilled))]
    for r in reqs:
        r.prompt = r.input_len
        if r.prefilled:
            r.prompt_done, r.generated, r.computed = r.input_len, 1, r.input_len
    paged, spec, pc = setup.kv is not None, setup.speculative, setup.prefix_cache
    pool = Pool(setup) if paged else None
    B = pool.B if paged else 1
    k1 = spec.k + 1 if spec else 1
    swap_s = (setup.kv_bytes_per_token / (setup.kv.swap_gbs * 1e9)
              if paged and setup.kv.preemption == "swap" else 0.0)
    readback_s = None                              # seconds per block read back, when worth it
    if pc is not None and pool.host_cap:
        readback_s = B * setup.kv_bytes_per_token / (pc.host_link_gbs * 1e9)
        if readback_s > 2 * setup.params * B / (setup.peak_flops * setup.mfu):   # recomputing is cheaper
            readback_s = None
    pending, waiting, running = list(reqs), deque(), []
    kv_used, now, done, steps = 0, 0.0, 0, []

    def spare():
        """The watermark is kept free only while other requests run (vLLM V1)."""
        return pool.watermark if running else 0

    while done < n:
        while pending and pending[0].arrival <= now:
            waiting.append(pending.pop(0))
        if not waiting and not running:
            now = pending[0].arrival
            continue
        extra, flags, preempted = 0.0, 0, False

        def preempt():
            """The last admitted running request goes back to the queue's head."""
            nonlocal extra, flags, preempted
            v = running.pop()
            preempted = True
            v.preemptions += 1
            pool.release(v, pc is not None)
            if swap_s:
                extra += v.computed * swap_s
                flags |= 4
                v.swapped = True
            else:
                v.gen0 = v.generated
                v.prompt = v.input_len + v.generated
                v.prompt_done = v.computed = 0
            waiting.appendleft(v)
            return v

        work, budget = _running_pass(running, pool, k1, setup.max_num_batched_tokens, preempt)
        while waiting and budget > 0 and len(running) < setup.max_num_seqs and not preempted:
            r = waiting[0]
            if not paged:
                if kv_used + r.input_len + r.output_len > setup.kv_capacity_tokens:
                    break
                kv_used += r.input_len + r.output_len
            elif r.swapped:
                need = -(-(r.computed + 1 if r.decoding() else r.prompt) // B)
                if pool.free() - need < spare():
                    break
                r.blocks = [pool.alloc() for _ in range(-(-(r.computed + 1 if r.decoding() else r.computed) // B))]
                extra += r.computed * swap_s
                flags |= 4
                r.swapped = False
                r.whole = True
            elif r.prefilled and r.preemptions == 0:
                need = -(-(r.input_len + 1) // B)
                if pool.free() - need < spare():
                    break
                r.blocks = [pool.alloc() for _ in range(need)]
                r.whole = True
            else:
                got = _admit_prompt(r, pool, pc, budget, spare(), readback_s)
                if got is None:
                    break
                extra += got[0]
                flags |= got[1]
            waiting.popleft()
            running.append(r)
            if r.decoding():
                work.append((r, k1))
                budget -= k1
            else:
                give = min(r.prompt - r.prompt_done, budget)
                if paged:                          # its first chunk's blocks (a swapped prompt's too)
                    r.blocks += [pool.alloc() for _ in range(-(-(r.computed + give) // B) - len(r.blocks))]
                    if not r.whole:
                        pool.name_blocks(r, (r.computed + give) // B)
                work.append((r, give))
                budget -= give
        tokens = sum(g for _, g in work)
        if not tokens and not extra:
            continue                               # everyone was preempted: no model step, no time
        context = sum(r.contribution() for r in running)
        pairs = sum(r.prompt_done + j + 1 for r, g in work if not r.decoding() for j in range(g))
        decs = sum(1 for r, _ in work if r.decoding())
        if spec and decs:
            extra += spec.k * spec.draft_cost * setup.step_time(decs, context)
        steps.append((now, tokens, context, pairs, extra, flags))
        now += setup.step_time(tokens, context, pairs, decs) + extra if (extra or flags) else \
            setup.step_time(tokens, context, pairs, decs)
        for r in _end_of_step(work, spec, now):
            running.remove(r)
            done += 1
            if paged:
                pool.release(r, pc is not None)
            else:
                kv_used -= r.input_len + r.output_len
    return reqs, steps, pool


def _running_pass(running, pool, k1, budget, preempt):
    """Paged: decoders in order, each whose blocks are full takes one; while none is free,
    ``preempt()`` the last admitted (the pass ends if that is the decoder itself); each names the
    block its token fills. Then decoders take k1 tokens each and prompts their chunks in order
    while the budget lasts, each chunk's blocks allocated first (preempting likewise; the pass ends
    if the victim is that request) and named. Returns (work, budget left)."""
    if pool is not None:
        B = pool.B
        for r in list(running):
            if r not in running:
                break                          # preempted: every later request is too
            if not r.decoding():
                continue
            if r.computed == len(r.blocks) * B:
                while not pool.free():
                    if preempt() is r:
                        break
                if r not in running:
                    break
                r.blocks.append(pool.alloc())
            if not r.whole:
                pool.name_blocks(r, (r.computed + 1) // B)
    work = []
    for r in running:
        if r.decoding():
            work.append((r, k1))
            budget -= k1
    for r in list(running):
        if r not in running:                   # preempted by an earlier chunk's allocation
            break
        if not r.decoding():
            give = min(r.prompt - r.prompt_done, budget)
            if give <= 0:
                break
            if pool is not None:               # this chunk's blocks, preempting the tail if short
                need = -(-(r.computed + give) // B) - len(r.blocks)
                while need > pool.free():
                    if preempt() is r:
                        break
                if r not in running:
                    break
                r.blocks += [pool.alloc() for _ in range(max(0, need))]
                if not r.whole:
                    pool.name_blocks(r, (r.computed + give) // B)
            work.append((r, give))
            budget -= give
    return work, budget


def _admit_prompt(r, pool, pc, budget, spare, readback_s):
    """Paged admission of a prompt after a prefix lookup (vLLM V1's, names private to the request
    included; host hits when reading back is cheaper): None if its blocks (less hits, a free hit
    counting as taken) and the spare do not fit, else (read-back seconds, flags); only the first
    chunk's blocks are taken."""
    B = pool.B
    hits, on_host = [], 0                 # names hit, in order
    if pc is not None:
        for j in range((r.prompt - 1) // B):
            h = name(r.prefix, j, B, r.id)
            if pool.first_copy(h) is not None:
                hits.append(h)
            elif h in pool.host:
                hits.append(h)
                on_host += 1
            else:
                break
        if on_host and readback_s is None:
            k = 0
            while k < len(hits) and pool.first_copy(hits[k]) is not None:
                k += 1
            hits, on_host = hits[:k], 0
    free_hits = sum(1 for h in hits if pool.first_copy(h) is not None and pool.ref[pool.first_copy(h)] == 0)
    blocks = -(-r.prompt // B)
    if pool.free() - free_hits - (blocks - len(hits) + on_host) < spare:
        return None
    taken = []
    for h in hits:                         # GPU hits held first, host ones leave the host
        b = pool.first_copy(h)
        if b is not None:
            pool.touch(b)
            taken.append(("gpu", b))
        else:
            del pool.host[h]
            taken.append(("host", h))
    # only the first chunk's blocks now (the whole prompt was checked)
    give = min(r.prompt - len(hits) * B, budget)
    fresh = [pool.alloc() for _ in range(-(-(len(hits) * B + give) // B) - len(hits) + on_host)]
    r.blocks = []
    for tier, t in taken:
        if tier == "gpu":
            r.blocks.append(t)
        else:                              # read back into a fresh block
            b = fresh.pop(0)
            pool.hash[b] = t
            pool.cached[t] = {b: None}
            r.blocks.append(b)
    r.blocks += fresh
    r.named = len(hits)
    r.whole = False
    r.prompt_done = r.computed = len(hits) * B
    r.cached += len(hits) * B
    r.host += on_host * B
    extra, flags = (on_host * readback_s, 2) if on_host else (0.0, 0)
    return extra, flags | (1 if r.preemptions else 0)


def _end_of_step(work, spec, now):
    """Each scheduled request's tokens land; returns those that finished."""
    finished = []
    for r, give in work:
        if not r.decoding():
            r.prompt_done += give
            r.computed += give
            if r.prompt_done == r.prompt:
                r.generated += 1
                if r.first_token is None:
                    r.first_token = now
        else:
            if spec:
                if r.rng is None:
                    r.rng = spec.rng(r.id)
                r.generated += spec.draw(r.rng, r.output_len - r.generated)
                r.spec_steps += 1
            else:
                r.generated += 1
            r.computed += 1
        if r.generated == r.output_len:
            r.finish = now
            finished.append(r)
    return finished


class NameCache:
    """The prefix cache's bookkeeping one block copy at a time (what sim.kv.prefix_cache.BlockCache
    keeps as runs): name -> its copies (first named first), holders per copy, the LRU of free
    copies, the host LRU of names (a shared name's last GPU copy goes there when evicted; private
    names, tuples, are dropped; naming drops a host name)."""

    def __init__(self, host_blocks, read_back):
        self.copies, self.ref, self.of = {}, {}, {}
        self.lru, self.host = OrderedDict(), OrderedDict()
        self.host_blocks, self.read_back = host_blocks, read_back
        self.made = 0

    def _gpu(self, h):
        c = self.copies.get(h)
        return c[0] if c else None

    def _new(self, h):
        c = self.made
        self.made += 1
        self.copies.setdefault(h, []).append(c)
        self.ref[c], self.of[c] = 0, h
        return c

    def lookup(self, names):
        hit = 0
        while hit < len(names) and self._gpu(names[hit]) is not None:
            hit += 1
        total, on_host = hit, 0
        if self.host and self.read_back:
            while total < len(names) and (self._gpu(names[total]) is not None or names[total] in self.host):
                on_host += self._gpu(names[total]) is None
                total += 1
        if not on_host:
            total = hit
        free = sum(1 for h in names[:total] if self._gpu(h) is not None and self.ref[self._gpu(h)] == 0)
        return total, on_host, free

    def take(self, names):
        out = []
        for h in names:
            c = self._gpu(h)
            if c is None:                      # read back from the host
                del self.host[h]
                c = self._new(h)
            self.lru.pop(c, None)
            self.ref[c] += 1
            out.append(c)
        return out

    def name(self, names):
        out = []
        for h in names:
            self.host.pop(h, None)
            c = self._new(h)
            self.ref[c] = 1
            out.append(c)
        return out

    def release(self, held):
        for c in reversed(held):
            self.ref[c] -= 1
            if self.ref[c] == 0:
                self.lru[c] = None

    def evict(self, n):
        for _ in range(n):
            c, _ = self.lru.popitem(last=False)
            h = self.of.pop(c)
            del self.ref[c]
            self.copies[h].remove(c)
            if not self.copies[h]:
                del self.copies[h]
                if self.host_blocks and not isinstance(h, tuple):
                    self.host[h] = None
                    if len(self.host) > self.host_blocks:
                        self.host.popitem(last=False)

    def cached_prefix(self, names):
        n = 0
        while n < len(names) and self._gpu(names[n]) is not None:
            n += 1
        return n
