"""Reference solution for 151: tree drafts for speculative decoding: the tree attention mask,
greedy verification of a tree, and the tree of a given size with the most expected tokens."""
import math
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _parents(parents, name="parents"):
    if not isinstance(parents, list) or any(not _whole(p) or not -1 <= p < i for i, p in enumerate(parents)):
        raise ValueError(f"{name} must be a list where item i is -1 or an earlier index (0 <= p < i), "
                         f"got {parents!r}")


def tree_attention(parents):
    """Depth of each node (1 for the children of the committed prefix) and the mask: node i sees
    node j when j is i or one of its ancestors."""
    _parents(parents)
    n = len(parents)
    depth, mask = [], []
    for i, p in enumerate(parents):
        depth.append(1 if p < 0 else depth[p] + 1)
        row = list(mask[p]) if p >= 0 else [0] * n
        row[i] = 1
        mask.append(row)
    return {"depth": depth, "mask": mask}


def verify_greedy(nodes, target):
    """Walk down from the committed prefix: at each step move to the first child whose token is the
    target model's greedy choice there; the choice after the last accepted node is the bonus token."""
    if not isinstance(nodes, list) or any(
            not isinstance(x, dict) or set(x) != {"parent", "token"} or not _whole(x["token"]) or x["token"] < 0
            for x in nodes):
        raise ValueError(f"nodes must be a list of {{parent, token: integer >= 0}}, got {nodes!r}")
    _parents([x["parent"] for x in nodes], "nodes")
    if not isinstance(target, list) or len(target) != len(nodes) + 1 or any(not _whole(t) or t < 0 for t in target):
        raise ValueError(f"target must be a list of {len(nodes) + 1} integers >= 0 (one per node plus one), "
                         f"got {target!r}")
    children = {}
    for i, x in enumerate(nodes):
        children.setdefault(x["parent"], []).append(i)
    accepted, at = [], -1
    while True:
        want = target[at + 1]
        nxt = next((c for c in children.get(at, []) if nodes[c]["token"] == want), None)
        if nxt is None:
            return {"accepted": accepted, "tokens": [nodes[i]["token"] for i in accepted] + [want]}
        accepted.append(nxt)
        at = nxt


def best_tree(rank_probs, size):
    """Grow a tree of `size` nodes, always adding the candidate with the largest probability of being
    accepted (its parent's value x rank_probs[rank]; the earliest created on ties). A node's
    candidates are its first child and its next sibling."""
    if not isinstance(rank_probs, list) or not rank_probs or any(
            isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < q <= 1 for q in rank_probs) \
            or any(a < b for a, b in zip(rank_probs, rank_probs[1:])) or math.fsum(rank_probs) > 1:
        raise ValueError(f"rank_probs must be a non-empty, non-increasing list of numbers in (0, 1] "
                         f"summing to at most 1, got {rank_probs!r}")
    if not _whole(size) or size < 0:
        raise ValueError(f"size must be an integer >= 0, got {size!r}")
    candidates = [(rank_probs[0], -1, 0)]      # (value, parent, rank), kept in creation order
    parents, ranks, values = [], [], []
    for i in range(size):
        best = 0
        for c in range(1, len(candidates)):
            if candidates[c][0] > candidates[best][0]:
                best = c
        value, parent, rank = candidates.pop(best)
        parents.append(parent)
        ranks.append(rank)
        values.append(value)
        candidates.append((value * rank_probs[0], i, 0))
        if rank + 1 < len(rank_probs):
            base = values[parent] if parent >= 0 else 1.0
            candidates.append((base * rank_probs[rank + 1], parent, rank + 1))
    return {"parents": parents, "ranks": ranks, "expected_tokens": 1.0 + sum(values)}
