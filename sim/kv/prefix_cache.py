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

What is cached, and when (vLLM's automatic prefix caching, simplified):

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

from collections import OrderedDict, deque
from itertools import compress, filterfalse, islice, repeat
from operator import add, not_, sub
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


class BlockCache:
    """The named blocks of one instance: each with the number of running requests holding it
    (``gpu``; 0 for a free one, which is also in the LRU), and the host tier. Counts only: no block
    ids (the pool counts plain blocks). The loops over a request's blocks run as C-level maps:
    a 100,000-request session run touches millions of blocks."""

    def __init__(self, config: PrefixCache, block_size: int, kv_bytes_per_token: float, setup):
        self.gpu: dict[int, int] = {}                       # name -> running requests holding it
        self.lru: OrderedDict[int, None] = OrderedDict()    # free named blocks, least recent first
        self.host: OrderedDict[int, None] = OrderedDict()
        self.host_blocks = config.host_tokens // block_size
        block_bytes = block_size * kv_bytes_per_token
        # seconds per block: reading it back over the link, and recomputing its tokens' matmuls
        self.readback_s = block_bytes / (config.host_link_gbs * 1e9) if self.host_blocks else 0.0
        self.recompute_s = 2 * setup.params * block_size / (setup.peak_flops * setup.mfu)

    def lookup(self, keys: list[int]) -> tuple[int, int, int]:
        """(blocks hit on the GPU or worth reading back, of those on the host, GPU hits now free)."""
        gpu, host = self.gpu, self.host
        hit = _leading(map(gpu.__contains__, keys), len(keys))
        on_host = 0
        if host and hit < len(keys) and self.readback_s <= self.recompute_s:
            total = hit
            for k in keys[hit:]:                    # the walk goes on through host blocks
                if k in host:
                    on_host += 1
                elif k not in gpu:
                    break
                total += 1
            if on_host:
                free_hits = sum(map(self.lru.__contains__, keys[:total]))
                return total, on_host, free_hits
        return hit, 0, sum(map(self.lru.__contains__, keys[:hit]))

    def take(self, keys: list[int]) -> None:
        """Hold the hit blocks ``keys`` (GPU ones leave the LRU, host ones move to the GPU)."""
        gpu, lru, host = self.gpu, self.lru, self.host
        if host:
            moved = [k for k in keys if k not in gpu]
            for k in moved:
                del host[k]
            gpu.update(zip(moved, repeat(0)))
        deque(map(lru.pop, filter(lru.__contains__, keys)), maxlen=0)
        gpu.update(zip(keys, map(add, map(gpu.__getitem__, keys), repeat(1))))

    def evict(self, n: int) -> None:
        """Evict the ``n`` least recently used free named blocks (to the host tier, if any)."""
        lru, gpu, host, cap = self.lru, self.gpu, self.host, self.host_blocks
        out = list(islice(lru, n))
        deque(map(lru.pop, out), maxlen=0)
        deque(map(gpu.pop, out), maxlen=0)
        if cap:
            host.update(zip(out, repeat(None)))
            if len(host) > cap:
                deque(map(host.pop, list(islice(host, len(host) - cap))), maxlen=0)

    def release(self, held: list[int], named: list[int]) -> int:
        """A request lets go of the named blocks it held (``held``, a prefix of ``named``) and
        names its other full blocks (``named`` beyond ``held``), tail first into the LRU (evicted
        before the head). Returns how many of its blocks become plain free blocks (duplicates of
        cached ones)."""
        gpu, lru, host = self.gpu, self.lru, self.host
        new = named[len(held):]
        fresh = list(filterfalse(gpu.__contains__, reversed(new)))
        if host:
            for k in fresh:
                host.pop(k, None)
        gpu.update(zip(fresh, repeat(0)))
        lru.update(zip(fresh, repeat(None)))
        if held:
            counts = list(map(sub, map(gpu.__getitem__, held), repeat(1)))
            gpu.update(zip(held, counts))
            if 0 in counts:
                lru.update(zip(compress(reversed(held), map(not_, reversed(counts))), repeat(None)))
        return len(new) - len(fresh)

    def cached_prefix(self, keys: list[int]) -> int:
        """Blocks of ``keys`` cached on the GPU from the first (what a prefix-aware router asks)."""
        return _leading(map(self.gpu.__contains__, keys), len(keys))


def _leading(flags, n: int) -> int:
    """How many of the booleans ``flags`` are True before the first False."""
    flags = list(flags)
    try:
        return flags.index(False)
    except ValueError:
        return n
