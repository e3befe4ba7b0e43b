"""Reference solution for 169: KV of compressed, sparse and sliding-window attention layers."""
import math
import numbers

KINDS = {"full": ("kind", "count", "bytes_per_token"),
         "window": ("kind", "count", "bytes_per_token", "window"),
         "sparse": ("kind", "count", "bytes_per_token", "top_k", "index_bytes_per_token")}


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name, value):
    _number(name, value)
    if not value >= 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def layer_bytes_per_token(attention, *, dtype_bytes, kv_heads=0, head_dim=0, kv_rank=0, rope_dim=0):
    """Bytes one token occupies in one layer: GQA keeps K and V per KV head, MLA one latent + RoPE key."""
    _positive("dtype_bytes", dtype_bytes)
    if attention == "gqa":
        _integer("kv_heads", kv_heads, 1)
        _integer("head_dim", head_dim, 1)
        return float(2 * kv_heads * head_dim * dtype_bytes)
    if attention == "mla":
        _integer("kv_rank", kv_rank, 1)
        _integer("rope_dim", rope_dim, 0)
        return float((kv_rank + rope_dim) * dtype_bytes)
    raise ValueError(f"attention must be 'gqa' or 'mla', got {attention!r}")


def _groups(layers):
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError(f"layers must be a non-empty list of layer groups, got {layers!r}")
    for group in layers:
        if not isinstance(group, dict) or group.get("kind") not in KINDS:
            raise ValueError(f"layers: each group must be a dict whose kind is one of {sorted(KINDS)}, "
                             f"got {group!r}")
        keys = KINDS[group["kind"]]
        if set(group) != set(keys):
            raise ValueError(f"layers: a {group['kind']!r} group has exactly the keys {list(keys)}, got "
                             f"{sorted(group)}")
        try:
            _integer("count", group["count"], 1)
            _positive("bytes_per_token", group["bytes_per_token"])
            if group["kind"] == "window":
                _integer("window", group["window"], 1)
            if group["kind"] == "sparse":
                _integer("top_k", group["top_k"], 1)
                _non_negative("index_bytes_per_token", group["index_bytes_per_token"])
        except ValueError as exc:
            raise ValueError(f"layers: {exc}") from None
    return layers


def _stored(context, groups):
    total = 0.0
    for g in groups:
        if g["kind"] == "full":
            total += g["count"] * g["bytes_per_token"] * context
        elif g["kind"] == "window":
            total += g["count"] * g["bytes_per_token"] * min(context, g["window"])
        else:
            total += g["count"] * (g["bytes_per_token"] + g["index_bytes_per_token"]) * context
    return total


def kv_bytes(context, layers):
    """{"stored_bytes", "read_bytes"} of one sequence of ``context`` tokens."""
    _integer("context", context, 0)
    groups = _groups(layers)
    read = 0.0
    for g in groups:
        if g["kind"] == "full":
            read += g["count"] * g["bytes_per_token"] * context
        elif g["kind"] == "window":
            read += g["count"] * g["bytes_per_token"] * min(context, g["window"])
        else:
            read += g["count"] * (g["bytes_per_token"] * min(context, g["top_k"])
                                  + g["index_bytes_per_token"] * context)
    return {"stored_bytes": _stored(context, groups), "read_bytes": read}


def max_context(budget_bytes, layers):
    """The longest context whose stored KV fits in budget_bytes; None when every length fits."""
    _non_negative("budget_bytes", budget_bytes)
    groups = _groups(layers)
    longest_window = max([g["window"] for g in groups if g["kind"] == "window"], default=0)
    grows = any(g["kind"] != "window" for g in groups)
    if not grows and _stored(longest_window, groups) <= budget_bytes:
        return None
    if _stored(1, groups) > budget_bytes:
        return 0
    low, high = 1, 2                      # stored(low) fits, stored(high) is to be tried
    while _stored(high, groups) <= budget_bytes:
        low, high = high, high * 2
    while high - low > 1:                 # stored(low) fits, stored(high) does not
        mid = (low + high) // 2
        if _stored(mid, groups) <= budget_bytes:
            low = mid
        else:
            high = mid
    return low
