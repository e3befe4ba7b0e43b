"""Reference solution for 142: the copy plan of a PD transfer (coalesced block copies, and which
prefill TP rank sends which KV heads to which decode TP rank)."""
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _pairs(block_pairs):
    if not isinstance(block_pairs, list) or any(
            not isinstance(p, list) or len(p) != 2 or not all(_whole(b) and b >= 0 for b in p) for p in block_pairs):
        raise ValueError(f"block_pairs must be a list of [src, dst] pairs of integers >= 0, got {block_pairs!r}")
    for side in (0, 1):
        ids = [p[side] for p in block_pairs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"block_pairs: a physical block appears twice on the {('source', 'destination')[side]} "
                             f"side, got {ids!r}")


def copy_plan(block_pairs, block_bytes, cached_blocks=0):
    """One [src_offset, dst_offset, nbytes] copy per maximal run of blocks that are consecutive on
    both sides, skipping the first cached_blocks blocks (already in the decode side's cache)."""
    _pairs(block_pairs)
    _int("block_bytes", block_bytes, 1)
    if not _whole(cached_blocks) or not 0 <= cached_blocks <= len(block_pairs):
        raise ValueError(f"cached_blocks must be an integer in [0, {len(block_pairs)}] (the request's blocks), "
                         f"got {cached_blocks!r}")
    plan = []
    for i in range(cached_blocks, len(block_pairs)):
        s, d = block_pairs[i]
        if i > cached_blocks and s == block_pairs[i - 1][0] + 1 and d == block_pairs[i - 1][1] + 1:
            plan[-1][2] += block_bytes
        else:
            plan.append([s * block_bytes, d * block_bytes, block_bytes])
    return plan


def _heads_of(rank, num_kv_heads, tp):
    """The KV heads TP rank `rank` holds: a slice when tp <= heads, one replicated head otherwise."""
    if tp <= num_kv_heads:
        per = num_kv_heads // tp
        return range(rank * per, (rank + 1) * per)
    h = rank // (tp // num_kv_heads)
    return range(h, h + 1)


def _layout(name, num_kv_heads, tp):
    _int(name, tp, 1)
    if num_kv_heads % tp and tp % num_kv_heads:  # neither divides the other
        raise ValueError(f"{name} must divide the number of KV heads ({num_kv_heads}) or be a multiple "
                         f"of it, got {tp!r}")


def tp_plan(num_kv_heads, prefill_tp, decode_tp):
    """For each decode rank, its [src_rank, head_lo, head_hi] pieces in head order; a head held by
    several prefill ranks is read from them in turn by the decode ranks that need it."""
    _int("num_kv_heads", num_kv_heads, 1)
    _layout("prefill_tp", num_kv_heads, prefill_tp)
    _layout("decode_tp", num_kv_heads, decode_tp)
    holders = {h: [] for h in range(num_kv_heads)}
    for p in range(prefill_tp):
        for h in _heads_of(p, num_kv_heads, prefill_tp):
            holders[h].append(p)
    readers = {h: 0 for h in range(num_kv_heads)}
    plan = []
    for d in range(decode_tp):
        pieces = []
        for h in _heads_of(d, num_kv_heads, decode_tp):
            src = holders[h][readers[h] % len(holders[h])]
            readers[h] += 1
            if pieces and pieces[-1][0] == src and pieces[-1][2] == h:
                pieces[-1][2] = h + 1
            else:
                pieces.append([src, h, h + 1])
        plan.append(pieces)
    return plan


def rank_bytes(num_kv_heads, prefill_tp, decode_tp, tokens, layers, head_dim, dtype_bytes):
    """Bytes each prefill rank sends and each decode rank receives for one request's KV."""
    plan = tp_plan(num_kv_heads, prefill_tp, decode_tp)
    _int("tokens", tokens, 1)
    _int("layers", layers, 1)
    _int("head_dim", head_dim, 1)
    _int("dtype_bytes", dtype_bytes, 1)
    per_head = 2 * tokens * layers * head_dim * dtype_bytes
    send = [0] * prefill_tp
    recv = [0] * decode_tp
    for d, pieces in enumerate(plan):
        for src, lo, hi in pieces:
            send[src] += (hi - lo) * per_head
            recv[d] += (hi - lo) * per_head
    return {"send_bytes": send, "recv_bytes": recv}
