"""Reference solution for 161: expert-parallel load balancing (EPLB, global policy): replicate the
hottest experts, then pack the replicas onto GPUs with the same number of slots each."""
import math
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _loads(loads):
    if not isinstance(loads, list) or not loads or any(not _whole(x) or x < 0 for x in loads):
        raise ValueError(f"loads must be a non-empty list of integers >= 0, got {loads!r}")


def _replicas(loads, num_redundant):
    """Counts per expert and the physical experts' logical ids (originals first, then each extra
    replica in the order it was added)."""
    counts = [1] * len(loads)
    physical = list(range(len(loads)))
    for _ in range(num_redundant):
        best = 0
        for e in range(1, len(loads)):
            if loads[e] / counts[e] > loads[best] / counts[best]:
                best = e
        counts[best] += 1
        physical.append(best)
    return counts, physical


def replicate(loads, num_redundant):
    """Replica count of each expert after giving each extra slot to the expert with the largest load
    per replica (the lowest index on ties)."""
    _loads(loads)
    _int("num_redundant", num_redundant, 0)
    return _replicas(loads, num_redundant)[0]


def _pack(weights, num_packs):
    per_pack = len(weights) // num_packs
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    members = [[] for _ in range(num_packs)]
    totals = [0.0] * num_packs
    for i in order:
        best = None
        for p in range(num_packs):
            if len(members[p]) < per_pack and (best is None or totals[p] < totals[best]):
                best = p
        members[best].append(i)
        totals[best] += weights[i]
    return members, totals


def pack(weights, num_packs):
    """Balanced packing: heaviest item first, each into the lightest pack that still has room
    (the lowest pack index on ties); every pack gets len(weights) / num_packs items."""
    if not isinstance(weights, list) or not weights or any(
            isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) or w < 0
            for w in weights):
        raise ValueError(f"weights must be a non-empty list of finite numbers >= 0, got {weights!r}")
    _int("num_packs", num_packs, 1)
    if len(weights) % num_packs:
        raise ValueError(f"num_packs must divide the number of items ({len(weights)}), got {num_packs}")
    members, totals = _pack(weights, num_packs)
    return {"members": members, "totals": totals}


def place(loads, num_gpus, redundant_per_gpu):
    """Give every GPU len(loads) / num_gpus experts plus redundant_per_gpu extra replicas: replicate,
    then pack the physical experts onto the GPUs by load per replica."""
    _loads(loads)
    _int("num_gpus", num_gpus, 1)
    if len(loads) % num_gpus:
        raise ValueError(f"num_gpus must divide the number of experts ({len(loads)}), got {num_gpus}")
    _int("redundant_per_gpu", redundant_per_gpu, 0)
    counts, physical = _replicas(loads, num_gpus * redundant_per_gpu)
    weights = [loads[e] / counts[e] for e in physical]
    members, totals = _pack(weights, num_gpus)
    mean = sum(totals) / num_gpus
    return {"gpu_experts": [[physical[i] for i in m] for m in members], "gpu_load": totals,
            "imbalance": max(totals) / mean if mean > 0 else 1.0}
