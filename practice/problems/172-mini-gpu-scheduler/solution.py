"""Reference solution for 172: a small Kubernetes-style GPU scheduler: filter the nodes that fit a
pod, score them (bin-pack or spread), bind; and how many pods of each size still fit afterwards."""
import numbers

STRATEGIES = ("binpack", "spread")


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _name(x):
    return isinstance(x, str) and x != ""


def _nodes(nodes):
    ok = isinstance(nodes, list) and nodes and all(
        isinstance(n, dict) and set(n) == {"name", "gpus", "gpu_type"} and _name(n["name"]) and _whole(n["gpus"])
        and n["gpus"] >= 1 and _name(n["gpu_type"]) for n in nodes)
    if not ok or len({n["name"] for n in nodes}) != len(nodes):
        raise ValueError(f"nodes must be a non-empty list of {{name, gpus: integer >= 1, gpu_type}} with distinct "
                         f"names, got {nodes!r}")


def _pods(pods):
    ok = isinstance(pods, list) and all(
        isinstance(p, dict) and set(p) == {"name", "gpus", "gpu_type"} and _name(p["name"]) and _whole(p["gpus"])
        and p["gpus"] >= 1 and (p["gpu_type"] is None or _name(p["gpu_type"])) for p in pods)
    if not ok or len({p["name"] for p in pods}) != len(pods):
        raise ValueError(f"pods must be a list of {{name, gpus: integer >= 1, gpu_type: a name or None}} with "
                         f"distinct names, got {pods!r}")


def schedule(nodes, pods, strategy):
    """Pods in order; a node fits a pod when its GPU type matches (None: any) and it has enough free
    GPUs; bin-pack takes the fitting node with the fewest GPUs left after binding, spread the most;
    ties go to the earlier node."""
    _nodes(nodes)
    _pods(pods)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    free = [n["gpus"] for n in nodes]
    assignment = {}
    for p in pods:
        best = None
        for i, n in enumerate(nodes):
            if (p["gpu_type"] is not None and p["gpu_type"] != n["gpu_type"]) or free[i] < p["gpus"]:
                continue
            left = free[i] - p["gpus"]
            if best is None or (left < free[best] - p["gpus"] if strategy == "binpack"
                                else left > free[best] - p["gpus"]):
                best = i
        if best is None:
            assignment[p["name"]] = None
        else:
            free[best] -= p["gpus"]
            assignment[p["name"]] = nodes[best]["name"]
    return {"assignment": assignment, "free": {n["name"]: f for n, f in zip(nodes, free)}}


def still_fits(free, sizes):
    """For each size, how many more pods of that size (alone) would fit: sum of free // size."""
    if not isinstance(free, list) or any(not _whole(f) or f < 0 for f in free):
        raise ValueError(f"free must be a list of integers >= 0, got {free!r}")
    if not isinstance(sizes, list) or any(not _whole(s) or s < 1 for s in sizes):
        raise ValueError(f"sizes must be a list of integers >= 1, got {sizes!r}")
    return [sum(f // s for f in free) for s in sizes]
