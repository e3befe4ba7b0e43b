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

from collections import OrderedDict
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
    keys, j = [], 0
    for key, end in prefix:
        base = key << KEY_SHIFT
        stop = min(count, end // block_size)
        while j < stop:
            keys.append(base | j)
            j += 1
        if j >= count:
            break
    return keys


class BlockCache:
    """The named blocks of one instance: held ones with their holder counts, free ones in an LRU,
    and the host tier. Counts only: no block ids (the pool counts plain blocks)."""

    def __init__(self, config: PrefixCache, block_size: int, kv_bytes_per_token: float, setup):
        self.ref: dict[int, int] = {}                       # name -> running requests holding it
        self.lru: OrderedDict[int, None] = OrderedDict()    # free named blocks, least recent first
        self.host: OrderedDict[int, None] = OrderedDict()
        self.host_blocks = config.host_tokens // block_size
        block_bytes = block_size * kv_bytes_per_token
        # seconds per block: reading it back over the link, and recomputing its tokens' matmuls
        self.readback_s = block_bytes / (config.host_link_gbs * 1e9) if self.host_blocks else 0.0
        self.recompute_s = 2 * setup.params * block_size / (setup.peak_flops * setup.mfu)

    def lookup(self, keys: list[int]) -> tuple[int, int, int]:
        """(blocks hit on the GPU or worth reading back, of those on the host, GPU hits now free)."""
        ref, lru, host = self.ref, self.lru, self.host
        gpu = on_host = free_hits = 0
        for k in keys:
            if k in ref:
                gpu += 1
            elif k in lru:
                gpu += 1
                free_hits += 1
            elif k in host:
                on_host += 1
            else:
                break
        if on_host and self.readback_s > self.recompute_s:
            # Recomputing is cheaper than reading back: stop at the first host block.
            hit = 0
            for k in keys:
                if k in ref or k in lru:
                    hit += 1
                else:
                    break
            free_hits = sum(1 for k in keys[:hit] if k in lru)
            return hit, 0, free_hits
        return gpu + on_host, on_host, free_hits

    def take(self, keys: list[int]) -> None:
        """Hold the hit blocks ``keys`` (GPU ones leave the LRU, host ones move to the GPU)."""
        ref, lru, host = self.ref, self.lru, self.host
        for k in keys:
            n = ref.get(k)
            if n is not None:
                ref[k] = n + 1
            else:
                if k in lru:
                    del lru[k]
                else:
                    del host[k]
                ref[k] = 1

    def evict(self, n: int) -> None:
        """Evict the ``n`` least recently used free named blocks (to the host tier, if any)."""
        lru, host, cap = self.lru, self.host, self.host_blocks
        for _ in range(n):
            k = lru.popitem(last=False)[0]
            if cap:
                host[k] = None
                if len(host) > cap:
                    host.popitem(last=False)

    def release(self, held: list[int], named: list[int]) -> int:
        """A request lets go of the named blocks it held (``held``, a prefix of ``named``) and
        names its other full blocks (``named`` beyond ``held``). Returns how many of its blocks
        become plain free blocks (duplicates of cached ones)."""
        ref, lru = self.ref, self.lru
        dup = 0
        for j in range(len(named) - 1, -1, -1):          # tail first: evicted before the head
            k = named[j]
            if j < len(held):
                n = ref[k] - 1
                if n:
                    ref[k] = n
                    continue
                del ref[k]
                lru[k] = None
            elif k in ref or k in lru:
                dup += 1
            else:
                if k in self.host:
                    del self.host[k]
                lru[k] = None
        return dup

    def cached_prefix(self, keys: list[int]) -> int:
        """Blocks of ``keys`` cached on the GPU from the first (what a prefix-aware router asks)."""
        ref, lru = self.ref, self.lru
        hit = 0
        for k in keys:
            if k in ref or k in lru:
                hit += 1
            else:
                break
        return hit
