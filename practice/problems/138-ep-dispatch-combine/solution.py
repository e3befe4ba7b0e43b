"""Reference solution for 138: expert-parallel dispatch (who sends what to whom, with one copy of a
token per destination rank) and combine (the weighted sum of the experts' outputs)."""
import math
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def dispatch(topk_ids, token_rank, num_experts, ep_size):
    """Route every (token, slot) pair to the rank that holds its expert (expert e lives on rank
    e // (experts per rank)); a token goes once to each rank it needs."""
    _int("num_experts", num_experts, 1)
    _int("ep_size", ep_size, 1)
    if num_experts % ep_size:
        raise ValueError(f"ep_size must divide the number of experts ({num_experts}), got {ep_size}")
    per_rank = num_experts // ep_size
    if not isinstance(topk_ids, list) or not topk_ids or any(
            not isinstance(row, list) or not row or len(row) != len(topk_ids[0]) or len(set(row)) != len(row)
            or any(not _whole(e) or not 0 <= e < num_experts for e in row) for row in topk_ids):
        raise ValueError(f"topk_ids must be a non-empty list of rows of one length, each of distinct expert ids "
                         f"in [0, {num_experts}), got {topk_ids!r}")
    if not isinstance(token_rank, list) or len(token_rank) != len(topk_ids) or any(
            not _whole(r) or not 0 <= r < ep_size for r in token_rank):
        raise ValueError(f"token_rank must give each of the {len(topk_ids)} tokens a rank in [0, {ep_size}), "
                         f"got {token_rank!r}")
    pairs = [[0] * ep_size for _ in range(ep_size)]
    copies = [[0] * ep_size for _ in range(ep_size)]
    recv = [[] for _ in range(ep_size)]
    load = [0] * num_experts
    for src in range(ep_size):
        for t, row in enumerate(topk_ids):
            if token_rank[t] != src:
                continue
            seen = set()
            for slot, e in enumerate(row):
                dst = e // per_rank
                pairs[src][dst] += 1
                if dst not in seen:
                    seen.add(dst)
                    copies[src][dst] += 1
                recv[dst].append([t, slot])
                load[e] += 1
    return {"pairs": pairs, "copies": copies, "recv": recv, "expert_load": load}


def combine(received, topk_weights):
    """out[t] = sum over the received items of token t of weight[t][slot] x the expert's output."""
    if not isinstance(topk_weights, list) or not topk_weights or any(
            not isinstance(row, list) or not row or len(row) != len(topk_weights[0]) or any(
                isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) for w in row)
            for row in topk_weights):
        raise ValueError(f"topk_weights must be a non-empty list of rows of one length of finite numbers, "
                         f"got {topk_weights!r}")
    tokens, k = len(topk_weights), len(topk_weights[0])
    ok = isinstance(received, list) and received and all(
        isinstance(x, dict) and set(x) == {"token", "slot", "out"} and _whole(x["token"]) and _whole(x["slot"])
        and 0 <= x["token"] < tokens and 0 <= x["slot"] < k and isinstance(x["out"], list) and x["out"]
        and all(not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v) for v in x["out"])
        for x in received)
    if ok:
        ok = len({len(x["out"]) for x in received}) == 1
    if not ok:
        raise ValueError(f"received must be a non-empty list of {{token < {tokens}, slot < {k}, out: a vector}} "
                         f"with vectors of one length, got {received!r}")
    hidden = len(received[0]["out"])
    out = [[0.0] * hidden for _ in range(tokens)]
    for x in received:
        w = topk_weights[x["token"]][x["slot"]]
        row = out[x["token"]]
        for i, v in enumerate(x["out"]):
            row[i] += w * v
    return out
