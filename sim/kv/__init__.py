"""Memory policies inside one instance: how KV space is handed out (``Setup.kv``) and whether
finished requests' KV is kept for reuse (``Setup.prefix_cache``).

    Setup(..., kv=Paged(block_size=16))                      # or kv="paged"; None: the handbook's rule
    Setup(..., kv="paged", prefix_cache=PrefixCache())       # LRU prefix cache in the free KV space
    Setup(..., kv="paged", prefix_cache=PrefixCache(host_tokens=2_000_000, host_link_gbs=50))

The scheduler (``sim.engine``) never touches blocks: it asks the policy whether the queue's head can
be admitted, tells it when a request starts decoding, asks how many quiet steps fit before blocks
run out, and releases a request's KV at its finish or preemption (``sim.kv.paged.BlockManager``).
"""

from sim.kv.paged import KV_POLICIES, PREEMPTION, BlockManager, Paged, Reserve, as_kv_policy
from sim.kv.prefix_cache import PrefixCache, block_keys

__all__ = ["KV_POLICIES", "PREEMPTION", "BlockManager", "Paged", "Reserve", "as_kv_policy",
           "PrefixCache", "block_keys"]
