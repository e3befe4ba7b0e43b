"""Reference solution for 146: prefix-chain block hashes and a lookup across cache tiers."""
import math
import numbers

FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211
MASK = (1 << 64) - 1


def _tokens(tokens):
    if not isinstance(tokens, list) or any(isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0
                                           for t in tokens):
        raise ValueError("tokens must be a list of integers >= 0")


def _block_size(block_size):
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")


def chain_hashes(tokens, block_size, seed=0):
    """One 64-bit FNV-1a hash per full block, each folding in the hash of the block before."""
    _tokens(tokens)
    _block_size(block_size)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= MASK:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    h = FNV_OFFSET ^ seed
    out = []
    for start in range(0, len(tokens) - block_size + 1, block_size):
        for t in tokens[start:start + block_size]:
            h = ((h ^ t) * FNV_PRIME) & MASK
        out.append(h)
    return out


def tiered_lookup(tokens, block_size, tiers, seed=0):
    """The longest cached prefix, block by block, each block from the fastest tier that has it."""
    hashes = chain_hashes(tokens, block_size, seed)
    if not isinstance(tiers, list) or len(tiers) == 0:
        raise ValueError("tiers must be a non-empty list")
    names = []
    for tier in tiers:
        if not isinstance(tier, dict) or set(tier) != {"name", "hashes", "ms_per_block"} \
                or not isinstance(tier["name"], str) or not isinstance(tier["hashes"], list):
            raise ValueError(f"tiers: each tier is {{name, hashes, ms_per_block}}, got {tier!r}")
        ms = tier["ms_per_block"]
        if isinstance(ms, bool) or not isinstance(ms, numbers.Real) or not math.isfinite(ms) or ms < 0:
            raise ValueError(f"tiers: ms_per_block must be a finite number >= 0, got {ms!r}")
        names.append(tier["name"])
    if len(set(names)) != len(names):
        raise ValueError("tiers: names must be distinct")
    sets = [set(t["hashes"]) for t in tiers]
    load_from, load_ms = [], 0.0
    for h in hashes:
        k = next((i for i, s in enumerate(sets) if h in s), None)
        if k is None:
            break
        load_from.append(tiers[k]["name"])
        load_ms += tiers[k]["ms_per_block"]
    return {"hit_tokens": len(load_from) * block_size, "load_from": load_from,
            "per_tier": {name: load_from.count(name) for name in names}, "load_ms": load_ms}
