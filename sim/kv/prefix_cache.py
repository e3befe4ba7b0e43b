"""Prefix caching: finished requests' KV blocks stay in the free KV space, least recently used first
out, and a request whose prompt starts with cached blocks skips their prefill compute.

Prefix identity. A request may carry ``prefix``: a tuple of segments ``(key, end)`` with ends
increasing, saying that its tokens ``[previous end, end)`` are the content named ``key`` (an int;
two requests with the same key hold the same tokens there). Block j (tokens ``[jB, (j+1)B)``) is
named by the first segment that covers all of it, ``(key << 24) | j``: a chain hash, since a key
stands for everything before it too (a session's key implies its system prompt). Any other full
block (past the last segment, or straddling its end) is named privately, ``(private_key(r), j)``:
vLLM hashes every full block by its tokens, and with no shared identity only its own request can
hit it again (after a preemption). A multi-turn session puts its answer inside its segment
(``end = input_len + output_len``) because the next turn's prompt repeats it.

What is cached, and when (vLLM V1's automatic prefix caching, ``cache_full_blocks`` and the free
block queue; sim/kv/paged.py says how the engine schedules it):

- a full block is named the step it is scheduled: a prompt chunk names the blocks it fills, a
  decoder the block its token fills. Requests running side by side, or admitted later in the same
  step, hit it at once. A block whose name is already cached is named too: a second copy, used
  once the first is evicted (a hit takes the first copy named that is still cached);
- freed blocks form one queue with the plain free blocks: unnamed ones (a partial last block) at
  its head, named copies no one holds at its tail, last block of a request first (its shared head
  is evicted last); allocation takes from the head, so plain blocks go before any cached copy is
  evicted, and a hit on a free copy takes it out of the queue (and counts as a block to take);
- a lookup walks the request's blocks from the first and stops at the first name not cached; the
  last prompt token is always computed (its logits give the first token), so at most
  ``(input_len - 1) // B`` blocks hit. A hit skips compute, not space: the block is held (shared).

The host tier (``host_tokens`` > 0; this simulator's own, V1 has it only as a KV connector): an
evicted copy that was its name's last on the GPU goes to host DRAM (its own LRU, oldest out when
full); private copies and duplicates are dropped. A lookup continues through host blocks; reading
them back costs ``tokens x kv_bytes_per_token / host_link_gbs`` seconds, added to the step that
admits the request, unless recomputing those tokens (their matmul FLOPs at ``mfu``) is cheaper, in
which case the hit stops at the first host block. A block read back moves to the GPU, and naming a
block on the GPU drops its name from the host (the tiers are exclusive). With ``host_tokens = 0``
this is V1's rule exactly.
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


# A block copy's state, one byte per block index in its run of copies
ABSENT, HOST, HELD, FREE = b"\x00", b"\x01", b"\x02", b"\x03"   # FREE: on the GPU, in the LRU


def private_key(request: int) -> tuple:
    """The key of a request's private blocks (full blocks no prefix segment covers): only that
    request can hit them (after a preemption), so they never enter anyone else's lookup."""
    return (-1, request)


class _Copies:
    """A run of copies of one key's blocks, indexed by block index: the state of each copy, the
    ranges requests hold (counts), and this run's pieces in the two LRUs. A key's runs are kept
    in creation order and a copy is written only into its key's newest run (a new run when that one
    already has a copy there), so for every block index the copies in run order are in naming order:
    a hit takes the first (vLLM's ``cached_block_hash_to_block``, first cached first)."""

    __slots__ = ("state", "holders", "lru", "host")

    def __init__(self):
        self.state = bytearray()
        self.holders: dict[tuple[int, int], int] = {}   # (lo, hi) -> holders of that range
        self.lru: list = []           # this run's live pieces in the GPU LRU
        self.host: list = []          # and in the host LRU


class _RunLRU:
    """Blocks least recently used first, kept as runs: a run is one run of copies' blocks, a list of
    descending intervals ``[hi, lo]`` (blocks hi-1 down to lo in LRU order). Blocks leave the middle
    by cutting their run's intervals; a run left empty is dropped when it reaches the front."""

    def __init__(self, attr: str):
        self.runs: deque = deque()    # [copies, key, intervals, size, alive]
        self.size = 0
        self.attr = attr              # which of a run of copies' lists holds its pieces here

    def append(self, ks: _Copies, key, hi: int, lo: int) -> None:
        """Append blocks ``hi-1 .. lo`` of ``ks`` (not in this LRU) at the most recent end."""
        self.size += hi - lo
        runs = self.runs
        if runs:
            last = runs[-1]
            if last[4] and last[0] is ks:
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

    def remove(self, ks: _Copies, lo: int, hi: int) -> None:
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

    def pop(self, n: int) -> list:
        """Take out the ``n`` least recently used blocks: ``(copies, key, lo, hi)`` intervals, in
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


def _walk(cs, lo: int, hi: int, lowest: int):
    """The first copies of blocks ``[lo, hi)`` among a key's runs ``cs``: pieces ``(copies, lo, hi)``
    and the first block with no copy in a state >= ``lowest`` (2: on the GPU; 1: or on the host).
    A GPU copy is preferred to a host one (a name is on the host only while no GPU copy exists)."""
    if len(cs) == 1:                              # the common case: one run of copies
        c = cs[0]
        st = c.state
        end = hi if hi <= len(st) else len(st)
        p = end
        if lo < end:
            a = st.find(ABSENT, lo, end)
            if a >= 0:
                p = a
            if lowest == 2:
                h = st.find(HOST, lo, p)
                if h >= 0:
                    p = h
        else:
            p = lo
        return ([(c, lo, p)] if p > lo else []), p
    pieces = []
    j = lo
    while j < hi:
        best = None
        for c in cs:
            st = c.state
            s = st[j] if j < len(st) else 0
            if s >= 2:
                best = c
                break
            if s == 1 and lowest == 1 and best is None:
                best = c
        if best is None:
            break
        if pieces and pieces[-1][0] is best and pieces[-1][2] == j:
            pieces[-1] = (best, pieces[-1][1], j + 1)
        else:
            pieces.append((best, j, j + 1))
        j += 1
    return pieces, j


class BlockCache:
    """The named blocks of one instance, as runs of copies per key (``_Copies``): which copies are on
    the GPU (held by running requests, or free and in the LRU) and which on the host, with the ranges
    requests hold. Counts only, no block ids (the pool counts the unnamed free blocks, the head of
    vLLM's free queue; this LRU is its named tail). A request's blocks are a few runs ``(key, lo,
    hi)`` (``block_runs``), so a lookup, a hold, a naming, a release and an eviction cost a few
    operations per run, not per block; the LRU order is still exact block by block (``_RunLRU``).

    ``lookup`` finds the first copies; ``take`` holds them; ``name`` makes new copies held by their
    request (every full block a request computes is named, a duplicate too: it is a later copy);
    ``release`` lets go of held ranges (copies no one holds join the LRU, tail first); ``evict``
    drops the least recently used free copies (to the host tier, if any: a copy of a shared name
    that was its last on the GPU; private copies are dropped)."""

    def __init__(self, config: PrefixCache, block_size: int, kv_bytes_per_token: float, setup):
        self.keys: dict = {}              # key -> its runs of copies, in creation order
        self.lru = _RunLRU("lru")         # free named copies, least recent first
        self.host = _RunLRU("host")
        self.host_blocks = config.host_tokens // block_size
        block_bytes = block_size * kv_bytes_per_token
        # seconds per block: reading it back over the link, and recomputing its tokens' matmuls
        self.readback_s = block_bytes / (config.host_link_gbs * 1e9) if self.host_blocks else 0.0
        self.recompute_s = 2 * setup.params * block_size / (setup.peak_flops * setup.mfu)

    def _pieces(self, runs, lowest: int):
        """The first copies of ``runs`` from the first block: (pieces ``(copies, key, lo, hi)``,
        blocks found, the first name not found as ``(key, j)`` or None)."""
        keys = self.keys
        out, n = [], 0
        for key, lo, hi in runs:
            cs = keys.get(key)
            if not cs:
                return out, n, (key, lo)
            if len(cs) == 1 and lowest == 2:          # _walk's common case, inlined
                c = cs[0]
                st = c.state
                end = hi if hi <= len(st) else len(st)
                if lo >= end:
                    return out, n, (key, lo)
                p = st.find(ABSENT, lo, end)
                if p < 0:
                    p = end
                h = st.find(HOST, lo, p)
                if h >= 0:
                    p = h
                if p > lo:
                    out.append((c, key, lo, p))
            else:
                pieces, p = _walk(cs, lo, hi, lowest)
                for c, a, b in pieces:
                    out.append((c, key, a, b))
            n += p - lo
            if p < hi:
                return out, n, (key, p)
        return out, n, None

    def lookup(self, runs):
        """(hit pieces, blocks hit on the GPU or worth reading back, of those on the host, GPU hits
        now free, the first name missed or None)."""
        pieces, hit, miss = self._pieces(runs, 2)
        if self.host.size and self.readback_s <= self.recompute_s:
            more, total, miss2 = self._pieces(runs, 1)
            if total > hit:
                on_host = free = 0
                for c, _, a, b in more:
                    st = c.state
                    on_host += st.count(HOST, a, b)
                    free += st.count(FREE, a, b)
                return more, total, on_host, free, miss2
        free = 0
        for c, _, a, b in pieces:
            free += c.state.count(FREE, a, b)
        return pieces, hit, 0, free, miss

    def take(self, pieces) -> None:
        """Hold the hit pieces (free GPU copies leave the LRU, host ones move to the GPU)."""
        lru, host = self.lru, self.host
        for c, key, lo, hi in pieces:
            if c.host:
                host.remove(c, lo, hi)
            if c.lru:
                lru.remove(c, lo, hi)
            c.state[lo:hi] = HELD * (hi - lo)
            h = c.holders
            h[lo, hi] = h.get((lo, hi), 0) + 1

    def name(self, key, lo: int, hi: int, prev=None):
        """New copies of blocks ``[lo, hi)`` of ``key``, held by the request computing them; returns
        the held piece, ``prev`` (the request's last piece) extended where it ends at ``lo`` in the
        same run and only that request holds it. A host copy of those names is dropped (the tiers
        are exclusive)."""
        cs = self.keys.get(key)
        if cs is None:                                # a new key (most sessions' own): one run
            c = _Copies()
            c.state = bytearray(lo) + HELD * (hi - lo)
            c.holders[lo, hi] = 1
            self.keys[key] = [c]
            return (c, key, lo, hi)
        if self.host.size:
            for c in cs[:]:
                if c.host:
                    st = c.state
                    end = hi if hi <= len(st) else len(st)
                    if lo < end and st.find(HOST, lo, end) >= 0:
                        self.host.remove(c, lo, end)
                        st[lo:end] = st[lo:end].replace(HOST, ABSENT)
                        self._forget(c, key)
            cs = self.keys.get(key)
        if cs is None:
            cs = self.keys[key] = []
        c = cs[-1] if cs else None
        if c is not None:
            st = c.state
            end = hi if hi <= len(st) else len(st)
            if lo < end and st.count(ABSENT, lo, end) != end - lo:
                c = None                          # it has a copy there already: a new run
        if c is None:
            c = _Copies()
            cs.append(c)
        st = c.state
        if hi > len(st):
            st += bytes(hi - len(st))
        st[lo:hi] = HELD * (hi - lo)
        h = c.holders
        if prev is not None and prev[0] is c and prev[3] == lo and h.get((prev[2], lo)) == 1:
            del h[prev[2], lo]
            h[prev[2], hi] = 1
            return (c, key, prev[2], hi)
        h[lo, hi] = h.get((lo, hi), 0) + 1
        return (c, key, lo, hi)

    def evict(self, n: int) -> None:
        """Evict the ``n`` least recently used free copies (to the host tier, if any)."""
        host, cap = self.host, self.host_blocks
        if cap:
            popped = self.lru.pop(n)
            for c, key, lo, hi in popped:
                self._to_host(c, key, lo, hi)
            for c, key, lo, hi in popped:            # once all its pieces are placed
                self._forget(c, key)
            if host.size > cap:
                for c, key, lo, hi in host.pop(host.size - cap):
                    c.state[lo:hi] = ABSENT * (hi - lo)
                    self._forget(c, key)
            return
        lru = self.lru
        run = lru.runs[0] if lru.runs else None
        if run is not None and run[4]:              # most evictions cut the oldest interval short
            iv = run[2][0]
            h = iv[0]
            if h - iv[1] > n:
                iv[0] = h - n
                run[3] -= n
                lru.size -= n
                run[0].state[h - n:h] = ABSENT * n
                return
        for c, key, lo, hi in lru.pop(n):
            c.state[lo:hi] = ABSENT * (hi - lo)
            self._forget(c, key)

    def _to_host(self, c: _Copies, key, lo: int, hi: int) -> None:
        """An evicted piece: its copies that were their name's last on the GPU go to the host tier
        (blocks hi-1 first, as they left), the others (and private copies) are dropped."""
        st = c.state
        cs = self.keys[key]
        if isinstance(key, tuple):
            keep = ()
        elif len(cs) == 1:
            st[lo:hi] = HOST * (hi - lo)
            self.host.append(c, key, hi, lo)
            return
        else:
            keep = [j for j in range(hi - 1, lo - 1, -1)
                    if not any(o is not c and j < len(o.state) and o.state[j] >= 2 for o in cs)]
        st[lo:hi] = ABSENT * (hi - lo)
        for j in keep:
            st[j] = 1
            self.host.append(c, key, j + 1, j)

    def _forget(self, c: _Copies, key) -> None:
        """Drop a run of copies none of which is cached any more (no pieces, no holders)."""
        if not (c.lru or c.host or c.holders):
            cs = self.keys.get(key)
            if cs is not None and c in cs:
                cs.remove(c)
                if not cs:
                    del self.keys[key]

    def release(self, pieces) -> None:
        """A request lets go of the pieces it held (hits and its own copies), given in block order:
        tail first, copies no one else holds join the LRU (evicted before the head)."""
        lru = self.lru
        for c, key, lo, hi in reversed(pieces):
            h = c.holders
            n = h[lo, hi] - 1
            if n:
                h[lo, hi] = n
                continue
            del h[lo, hi]
            if h:                                   # what no other holder covers drops to 0
                spans = [(lo, hi)]
                for (a, b) in h:
                    if a < hi and b > lo:
                        spans = [piece for s in spans for piece in _minus(s, a, b)]
                for a, b in reversed(spans):
                    c.state[a:b] = FREE * (b - a)
                    lru.append(c, key, b, a)
            else:
                c.state[lo:hi] = FREE * (hi - lo)
                lru.append(c, key, hi, lo)

    def cached_prefix(self, runs) -> int:
        """Blocks of ``runs`` cached on the GPU from the first (what a prefix-aware router asks)."""
        return self._pieces(runs, 2)[1]


def _minus(span, a: int, b: int):
    lo, hi = span
    out = []
    if lo < a:
        out.append((lo, min(hi, a)))
    if hi > b:
        out.append((max(lo, b), hi))
    return out
