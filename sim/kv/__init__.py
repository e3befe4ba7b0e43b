"""Memory policies inside one instance: how KV space is handed out (``Setup.kv``) and whether
finished requests' KV is kept for reuse (``Setup.prefix_cache``).

    Setup(..., kv=Paged(block_size=16))                      # or kv="paged"; None: the handbook's rule
    Setup(..., kv="paged", prefix_cache=PrefixCache())       # LRU prefix cache in the free KV space
    Setup(..., kv="paged", prefix_cache=PrefixCache(host_tokens=2_000_000, host_link_gbs=50))

The scheduler (``sim.engine``) never touches blocks: it asks the KV manager for ``Setup.kv``
(``sim.kv.manager``: ``ReserveManager``, ``sim.kv.paged.PagedManager``) whether the queue's head can
be admitted and with how many cached tokens, for the step's KV (which preempts a victim when short),
how many quiet steps fit, and to free a request's KV at its finish.
"""

from sim.kv.manager import RESUME, ReserveManager
from sim.kv.paged import KV_POLICIES, PREEMPTION, BlockManager, Paged, PagedManager, Reserve, as_kv_policy
from sim.kv.prefix_cache import PrefixCache, block_keys

__all__ = ["KV_POLICIES", "PREEMPTION", "RESUME", "BlockManager", "Paged", "PagedManager", "Reserve",
           "ReserveManager", "as_kv_policy", "kv_manager",
           "PrefixCache", "block_keys"]


def kv_manager(setup):
    """The KV manager for ``Setup.kv``: the handbook's reservation (None) or paged blocks."""
    return ReserveManager(setup) if setup.kv is None else PagedManager(setup)
