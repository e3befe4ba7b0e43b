"""Reference solution for 131: a block prefix cache keyed by (adapter, prefix), with LRU eviction."""
import numbers


def run_prefix_cache(capacity_blocks, block_size, requests):
    """Look up then insert each request's full blocks; one record per request."""
    for name, value in (("capacity_blocks", capacity_blocks), ("block_size", block_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if not isinstance(requests, list):
        raise ValueError("requests must be a list")
    for r in requests:
        if not isinstance(r, dict) or set(r) != {"adapter", "tokens"} or not isinstance(r["tokens"], list) \
                or not (r["adapter"] is None or isinstance(r["adapter"], str)):
            raise ValueError(f"requests: each request is {{adapter: str or None, tokens: list}}, got {r!r}")
    lru = []                  # block keys, least recently used first
    records = []
    for r in requests:
        tokens = r["tokens"]
        keys = [(r["adapter"], tuple(tokens[:(i + 1) * block_size])) for i in range(len(tokens) // block_size)]
        hit = 0
        for key in keys:
            if key not in lru:
                break
            hit += 1
        evicted = 0
        for key in keys:
            if key in lru:
                lru.remove(key)
            elif len(lru) == capacity_blocks:
                lru.pop(0)
                evicted += 1
            lru.append(key)
        records.append({"hit_tokens": hit * block_size, "evicted": evicted, "cached_blocks": len(lru)})
    return records
