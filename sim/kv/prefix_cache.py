"""Prefix caching: finished requests' KV blocks stay in the free KV space, least recently used first
out, and a request whose prompt starts with cached blocks skips their prefill compute.

Prefix identity. A request may carry ``prefix``: a tuple of segments ``(key, end)`` with ends
increasing, saying that its tokens ``[previous end, end)`` are the content named ``key`` (an int;
two requests with the same key hold the same tokens there). Block j (tokens ``[jB, (j+1)B)``) is
named by the first segment that covers all of it, ``(key << 24) | j``: a chain hash, since a key
stands for everything before it too (a session's key implies its system prompt). Blocks past the
last segment, and the partial last block, are private and never cached. A multi-turn session puts
its answer inside its segment (``end = input_len + output_len``) because the next turn's prompt
repeats it.

What is cached, and when (vLLM's automatic prefix caching, simplified; sim/kv/paged.py lists where
this differs from vLLM V1, which names a block as soon as it is computed):

- a request's full blocks are named when it releases its KV (finish or preemption); a block whose
  name is already cached is a duplicate and is freed plainly. Requests running side by side with
  the same uncached prefix do not share it until one of them has finished;
- released named blocks join the LRU in reverse order (the tail of a sequence is evicted first,
  its shared head last); plain free blocks are handed out before any cached block is evicted;
- a lookup walks the request's blocks from the first and stops at the first one not cached; the
  last prompt token is always computed (its logits give the first token), so at most
  ``(input_len - 1) // B`` blocks hit. A hit skips compute, not space: the block is held (shared).

The host tier (``host_tokens`` > 0): a block evicted from the GPU goes to host DRAM (its own LRU,
oldest out when full). A lookup continues through host blocks; reading them back costs
``tokens x kv_bytes_per_token / host_link_gbs`` seconds, added to the step that admits the request,
unless recomputing those tokens (their matmul FLOPs at ``mfu``) is cheaper, in which case the hit
stops at the first host block. A block read back moves to the GPU (the tiers are exclusive).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from sim.validate import check_int, check_number


@dataclass(frozen=True)
class PrefixCache:
    """Keep finished requests' KV blocks for reuse (needs ``Setup.kv`` paged).

    host_tokens     KV tokens of host DRAM behind the GPU cache (0: no second tier)
    host_link_gbs   GB/s of the host-to-GPU link (10^9 bytes/s); required when host_tokens > 0
    """

    host_tokens: int = 0
    host_link_gbs: float | None = None

    def __post_init__(self):
        check_int("PrefixCache.host_tokens", self.host_tokens, 0)
        if self.host_tokens > 0:
            if self.host_link_gbs is None:
                raise ValueError("PrefixCache.host_link_gbs must be given (> 0 GB/s) when host_tokens > 0: "
                                 "a host tier needs a link to read its blocks back")
            check_number("PrefixCache.host_link_gbs", self.host_link_gbs, 0, note="(GB/s)")
        elif self.host_link_gbs is not None:
            check_number("PrefixCache.host_link_gbs", self.host_link_gbs, 0, note="(GB/s)")


KEY_SHIFT = 24          # block index bits in a block's name


def cacheable_blocks(prefix, block_size: int) -> int:
    """Full blocks of a request that have a name (0 without prefix identity)."""
    return prefix[-1][1] // block_size if prefix else 0


def block_keys(prefix, count: int, block_size: int) -> list[int]:
    """Names of a request's first ``count`` blocks (``count <= cacheable_blocks``)."""
    keys: list[int] = []
    j = 0
    for key, end in prefix:
        stop = min(count, end // block_size)
        if stop > j:
            base = key << KEY_SHIFT              # block index in the low bits: base | j == base + j
            keys.extend(range(base + j, base + stop))
            j = stop
        if j >= count:
            break
    return keys


def block_runs(prefix, count: int, block_size: int) -> list[tuple[int, int, int]]:
    """A request's first ``count`` blocks as runs ``(key, lo, hi)``: blocks ``lo..hi-1`` named
    ``(key << KEY_SHIFT) | j`` (``count <= cacheable_blocks``; what ``block_keys`` lists one by one)."""
    runs: list[tuple[int, int, int]] = []
    j = 0
    for key, end in prefix:
        stop = end // block_size
        if stop > count:
            stop = count
        if stop > j:
            runs.append((key, j, stop))
            j = stop
        if j >= count:
            break
    return runs


def first_runs(runs, n: int) -> list[tuple[int, int, int]]:
    """The first ``n`` blocks of ``runs``."""
    out = []
    for key, lo, hi in runs:
        if n <= 0:
            break
        if hi - lo > n:
            hi = lo + n
        out.append((key, lo, hi))
        n -= hi - lo
    return out


# A block's state, one byte per block index of its key
ABSENT, HOST, HELD, FREE = b"\x00", b"\x01", b"\x02", b"\x03"   # FREE: on the GPU, in the LRU


class _Key:
    """One prefix key's blocks: their states by block index, the ranges running requests hold, and
    the key's runs in the two LRUs."""

    __slots__ = ("state", "holders", "lru", "host")

    def __init__(self):
        self.state = bytearray()
        self.holders: dict[tuple[int, int], int] = {}   # (lo, hi) -> running requests holding it
        self.lru: list = []           # this key's live runs in the GPU LRU
        self.host: list = []          # and in the host LRU

    def first_off_gpu(self, lo: int, hi: int) -> int:
        """The first block of ``[lo, hi)`` not on the GPU (``hi`` if none)."""
        st = self.state
        if hi > len(st):
            hi = len(st)
            if lo >= hi:
                return lo
        a, h = st.find(ABSENT, lo, hi), st.find(HOST, lo, hi)
        if a < 0:
            return hi if h < 0 else h
        return a if h < 0 or a < h else h

    def first_absent(self, lo: int, hi: int) -> int:
        """The first block of ``[lo, hi)`` neither on the GPU nor on the host."""
        st = self.state
        if hi > len(st):
            hi = len(st)
            if lo >= hi:
                return lo
        a = st.find(ABSENT, lo, hi)
        return hi if a < 0 else a


class _RunLRU:
    """Blocks least recently used first, kept as runs: a run is one key's blocks, a list of
    descending intervals ``[hi, lo]`` (blocks hi-1 down to lo in LRU order). Blocks leave the middle
    by cutting their run's intervals; a run left empty is dropped when it reaches the front."""

    def __init__(self, attr: str):
        self.runs: deque = deque()    # [key state, key, intervals, size, alive]
        self.size = 0
        self.attr = attr              # which of a key's lists holds its runs here

    def append(self, ks: _Key, key: int, hi: int, lo: int) -> None:
        """Append blocks ``hi-1 .. lo`` of ``key`` (not in this LRU) at the most recent end."""
        self.size += hi - lo
        runs = self.runs
        if runs:
            last = runs[-1]
            if last[4] and last[1] == key:
                iv = last[2][-1]
                if iv[1] == hi:
                    iv[1] = lo
                else:
                    last[2].append([hi, lo])
                last[3] += hi - lo
                return
        run = [ks, key, [[hi, lo]], hi - lo, True]
        runs.append(run)
        getattr(ks, self.attr).append(run)

    def remove(self, ks: _Key, lo: int, hi: int) -> None:
        """Take the blocks of ``[lo, hi)`` that are here out of their runs."""
        mine = getattr(ks, self.attr)
        for run in mine[:]:
            ivs = run[2]
            cut = 0
            new = []
            for iv in ivs:
                h, l = iv
                if l >= hi or h <= lo:
                    new.append(iv)
                    continue
                if h > hi:
                    new.append([h, hi])
                if l < lo:
                    new.append([lo, l])
                cut += min(h, hi) - max(l, lo)
            if cut:
                run[2] = new
                run[3] -= cut
                self.size -= cut
                if not run[3]:
                    run[4] = False
                    mine.remove(run)

    def pop(self, n: int) -> list[tuple[_Key, int, int, int]]:
        """Take out the ``n`` least recently used blocks: ``(key state, key, lo, hi)`` intervals, in
        LRU order (each interval from hi-1 down to lo)."""
        out = []
        runs = self.runs
        self.size -= n
        while n:
            run = runs[0]
            if not run[4]:
                runs.popleft()
                continue
            ks, key, ivs = run[0], run[1], run[2]
            while n and ivs:
                iv = ivs[0]
                h, l = iv
                if h - l <= n:
                    out.append((ks, key, l, h))
                    n -= h - l
                    run[3] -= h - l
                    ivs.pop(0)
                else:
                    out.append((ks, key, h - n, h))
                    iv[0] = h - n
                    run[3] -= n
                    n = 0
            if not ivs:
                run[4] = False
                getattr(ks, self.attr).remove(run)
                runs.popleft()
        return out


class BlockCache:
    """The named blocks of one instance, per prefix key as runs of block indices: which are on the
    GPU (held by running requests, or free and in the LRU) and which on the host, with the ranges
    running requests hold. Counts only: no block ids (the pool counts plain blocks). A request's
    blocks are a few runs ``(key, lo, hi)`` (``block_runs``), so a lookup, a hold, a release and an
    eviction cost a few operations per run, not per block; the LRU order is still exact block by
    block (``_RunLRU``)."""

    def __init__(self, config: PrefixCache, block_size: int, kv_bytes_per_token: float, setup):
        self.keys: dict[int, _Key] = {}
        self.lru = _RunLRU("lru")     # free named blocks, least recent first
        self.host = _RunLRU("host")
        self.host_blocks = config.host_tokens // block_size
        block_bytes = block_size * kv_bytes_per_token
        # seconds per block: reading it back over the link, and recomputing its tokens' matmuls
        self.readback_s = block_bytes / (config.host_link_gbs * 1e9) if self.host_blocks else 0.0
        self.recompute_s = 2 * setup.params * block_size / (setup.peak_flops * setup.mfu)

    def _hits(self, runs, host: bool) -> int:
        """Blocks of ``runs`` on the GPU (and, with ``host``, on the host) from the first."""
        n = 0
        keys = self.keys
        for key, lo, hi in runs:
            ks = keys.get(key)
            if ks is None:
                return n
            p = ks.first_absent(lo, hi) if host else ks.first_off_gpu(lo, hi)
            n += p - lo
            if p < hi:
                return n
        return n

    def lookup(self, runs) -> tuple[int, int, int]:
        """(blocks hit on the GPU or worth reading back, of those on the host, GPU hits now free)."""
        keys = self.keys
        hit = free = 0
        for key, lo, hi in runs:                    # the GPU walk (first_off_gpu, inlined)
            ks = keys.get(key)
            if ks is None:
                break
            st = ks.state
            end = hi if hi <= len(st) else len(st)
            if lo >= end:
                break
            p, h = st.find(ABSENT, lo, end), st.find(HOST, lo, end)
            if p < 0:
                p = end if h < 0 else h
            elif 0 <= h < p:
                p = h
            if p > lo:
                hit += p - lo
                free += st.count(FREE, lo, p)
            if p < hi:
                break
        if self.host.size and self.readback_s <= self.recompute_s:
            total = self._hits(runs, True)
            if total > hit:
                on_host = free = 0
                for key, lo, hi in first_runs(runs, total):
                    st = keys[key].state
                    on_host += st.count(HOST, lo, hi)
                    free += st.count(FREE, lo, hi)
                return total, on_host, free
        return hit, 0, free

    def take(self, runs) -> None:
        """Hold the hit blocks ``runs`` (GPU ones leave the LRU, host ones move to the GPU)."""
        keys, lru, host = self.keys, self.lru, self.host
        for key, lo, hi in runs:
            ks = keys[key]
            if ks.host:
                host.remove(ks, lo, hi)
            if ks.lru:
                lru.remove(ks, lo, hi)
            ks.state[lo:hi] = HELD * (hi - lo)
            h = ks.holders
            h[lo, hi] = h.get((lo, hi), 0) + 1

    def evict(self, n: int) -> None:
        """Evict the ``n`` least recently used free named blocks (to the host tier, if any)."""
        host, cap = self.host, self.host_blocks
        if cap:
            for ks, key, lo, hi in self.lru.pop(n):
                ks.state[lo:hi] = HOST * (hi - lo)
                host.append(ks, key, hi, lo)
            if host.size > cap:
                for ks, key, lo, hi in host.pop(host.size - cap):
                    ks.state[lo:hi] = ABSENT * (hi - lo)
                    self._forget(ks, key)
        else:
            lru = self.lru
            run = lru.runs[0] if lru.runs else None
            if run is not None and run[4]:          # most evictions cut the oldest interval short
                iv = run[2][0]
                h = iv[0]
                if h - iv[1] > n:
                    iv[0] = h - n
                    run[3] -= n
                    lru.size -= n
                    run[0].state[h - n:h] = ABSENT * n
                    return
            for ks, key, lo, hi in lru.pop(n):
                ks.state[lo:hi] = ABSENT * (hi - lo)
                self._forget(ks, key)

    def _forget(self, ks: _Key, key: int) -> None:
        """Drop a key none of whose blocks is cached any more (no runs, no holders)."""
        if not (ks.lru or ks.host or ks.holders) and self.keys.get(key) is ks:
            del self.keys[key]

    def release(self, held, named) -> int:
        """A request lets go of the named blocks it held (``held``, runs covering the first blocks of
        ``named``) and names its other full blocks (``named`` beyond ``held``), tail first into the
        LRU (evicted before the head). Returns how many of its blocks become plain free blocks
        (duplicates of cached ones)."""
        skip = 0
        for _, lo, hi in held:
            skip += hi - lo
        new = named
        if skip:                                    # the held runs come first
            new = []
            for key, lo, hi in named:
                if skip >= hi - lo:
                    skip -= hi - lo
                    continue
                new.append((key, lo + skip, hi))
                skip = 0
        dup = 0
        for key, lo, hi in reversed(new):
            dup += self._name(key, lo, hi)
        lru = self.lru
        keys = self.keys
        for key, lo, hi in reversed(held):
            ks = keys[key]
            h = ks.holders
            c = h[lo, hi] - 1
            if c:
                h[lo, hi] = c
                continue
            del h[lo, hi]
            if h:                                   # what no other holder covers drops to 0
                spans = [(lo, hi)]
                for (a, b) in h:
                    if a < hi and b > lo:
                        spans = [piece for s in spans for piece in _minus(s, a, b)]
                for a, b in reversed(spans):
                    ks.state[a:b] = FREE * (b - a)
                    lru.append(ks, key, b, a)
            else:
                ks.state[lo:hi] = FREE * (hi - lo)
                lru.append(ks, key, hi, lo)
        return dup

    def _name(self, key: int, lo: int, hi: int) -> int:
        """Name blocks ``[lo, hi)`` of ``key`` as they are released: those not on the GPU join the
        LRU, tail first; returns how many were on the GPU already (duplicates)."""
        ks = self.keys.get(key)
        if ks is None:
            ks = self.keys[key] = _Key()
        st = ks.state
        if hi > len(st):
            st += bytes(hi - len(st))
        on_gpu = st.count(HELD, lo, hi)
        on_gpu += st.count(FREE, lo, hi)
        if on_gpu == hi - lo:
            return on_gpu
        if on_gpu:
            spans, a = [], None
            for j in range(lo, hi + 1):
                off = j < hi and st[j] < 2
                if off and a is None:
                    a = j
                elif not off and a is not None:
                    spans.append((a, j))
                    a = None
        else:
            spans = [(lo, hi)]
        host, lru = self.host, self.lru
        for a, b in reversed(spans):
            if ks.host:
                host.remove(ks, a, b)
            st[a:b] = FREE * (b - a)
            lru.append(ks, key, b, a)
        return on_gpu

    def cached_prefix(self, runs) -> int:
        """Blocks of ``runs`` cached on the GPU from the first (what a prefix-aware router asks)."""
        return self._hits(runs, False)


def _minus(span, a: int, b: int):
    lo, hi = span
    out = []
    if lo < a:
        out.append((lo, min(hi, a)))
    if hi > b:
        out.append((max(lo, b), hi))
    return out
