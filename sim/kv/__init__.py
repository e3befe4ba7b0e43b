"""Memory policies inside one instance: how KV space is handed out (``Setup.kv``) and whether
finished requests' KV is kept for reuse (``Setup.prefix_cache``).

    Setup(..., kv=Paged(block_size=16))                      # or kv="paged"; None: the handbook's rule
    Setup(..., kv="paged", prefix_cache=PrefixCache())       # LRU prefix cache in the free KV space
    Setup(..., kv="paged", prefix_cache=PrefixCache(host_tokens=2_000_000, host_link_gbs=50))
    Setup(..., kv=RatioReserve())                            # or kv="ratio": SGLang's new_token_ratio
    Setup(..., kv=admission_policy("sglang"))                # an engine's policy at saturation

The scheduler (``sim.engine``) never touches blocks: it asks the KV manager for ``Setup.kv``
(``sim.kv.manager``: ``ReserveManager``, ``sim.kv.paged.PagedManager``,
``sim.kv.ratio.RatioManager``) whether the queue's head can
be admitted and with how many cached tokens, for the step's KV (which preempts a victim when short),
how many quiet steps fit, and to free a request's KV at its finish.
"""

from sim.kv.manager import RESUME, ReserveManager
from sim.kv.paged import KV_POLICIES, PREEMPTION, BlockManager, Paged, PagedManager, Reserve, as_kv_policy
from sim.kv.prefix_cache import PrefixCache, block_keys
from sim.kv.ratio import RatioManager, RatioReserve

__all__ = ["KV_POLICIES", "PREEMPTION", "RESUME", "BlockManager", "Paged", "PagedManager", "Reserve",
           "ReserveManager", "RatioManager", "RatioReserve", "as_kv_policy", "kv_manager",
           "PrefixCache", "block_keys", "ENGINE_ADMISSION", "admission_policy"]


def kv_manager(setup):
    """The KV manager for ``Setup.kv``: the handbook's reservation (None), paged blocks, or
    SGLang's ratio reservation."""
    if setup.kv is None:
        return ReserveManager(setup)
    if isinstance(setup.kv, RatioReserve):
        return RatioManager(setup)
    return PagedManager(setup)


# Each engine's admission at saturation, as its default configuration behaves:
# - vLLM V1: paged blocks, admission checks the prompt's blocks, preemption by recompute (Paged);
# - SGLang: the new_token_ratio reservation with retraction (RatioReserve, sim/kv/ratio.py);
# - TensorRT-LLM: the default capacity_scheduler_policy GUARANTEED_NO_EVICT admits a request only
#   if its whole sequence (prompt + max output) fits, so a started request is never paused
#   (nvidia.github.io/TensorRT-LLM, performance/performance-tuning-guide/useful-runtime-flags,
#   "Capacity Scheduler Policy"; SchedulerConfig.capacity_scheduler_policy): the handbook's
#   Reserve, in tokens rather than TRT-LLM's blocks.
ENGINE_ADMISSION = {"vllm": Paged, "sglang": RatioReserve, "trtllm": Reserve}


def admission_policy(engine: str):
    """The ``Setup.kv`` policy for an engine's admission at saturation: "vllm" -> ``Paged()``,
    "sglang" -> ``RatioReserve()``, "trtllm" -> ``Reserve()`` (which ``Setup`` stores as None)."""
    if engine not in ENGINE_ADMISSION:
        raise ValueError(f"engine must be one of {sorted(ENGINE_ADMISSION)}, got {engine!r}")
    return ENGINE_ADMISSION[engine]()
