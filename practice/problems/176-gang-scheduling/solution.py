"""Reference solution for 176: gang scheduling (all pods of a job or none) against pod-by-pod
placement (partial jobs hold GPUs they cannot use), and how fragmented the free GPUs are."""
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _free(name, free, nonempty):
    if not isinstance(free, list) or (nonempty and not free) or any(not _whole(f) or f < 0 for f in free):
        raise ValueError(f"{name} must be a {'non-empty ' if nonempty else ''}list of integers >= 0, got {free!r}")


def _jobs(jobs):
    ok = isinstance(jobs, list) and all(
        isinstance(j, dict) and set(j) == {"name", "pods", "gpus_per_pod"} and isinstance(j["name"], str)
        and j["name"] != "" and _whole(j["pods"]) and j["pods"] >= 1 and _whole(j["gpus_per_pod"])
        and j["gpus_per_pod"] >= 1 for j in jobs)
    if not ok or len({j["name"] for j in jobs}) != len(jobs):
        raise ValueError(f"jobs must be a list of {{name, pods: integer >= 1, gpus_per_pod: integer >= 1}} with "
                         f"distinct names, got {jobs!r}")


def _binpack(free, g):
    """The node with the fewest GPUs left after taking g (the earliest on ties), or None."""
    best = None
    for i, f in enumerate(free):
        if f >= g and (best is None or f < free[best]):
            best = i
    return best


def gang_schedule(nodes_free, jobs):
    """Jobs in order; place a job's pods one by one (bin-pack) and keep them only if all fit."""
    _free("nodes_free", nodes_free, True)
    _jobs(jobs)
    free, placed = list(nodes_free), {}
    for j in jobs:
        trial, where = list(free), []
        for _ in range(j["pods"]):
            i = _binpack(trial, j["gpus_per_pod"])
            if i is None:
                where = None
                break
            trial[i] -= j["gpus_per_pod"]
            where.append(i)
        if where is not None:
            free = trial
        placed[j["name"]] = where
    return {"placed": placed, "free": free}


def pod_by_pod(nodes_free, jobs):
    """Jobs in order, pods one by one (bin-pack), no rollback: a job missing any pod cannot start,
    but its placed pods keep their GPUs (stranded)."""
    _free("nodes_free", nodes_free, True)
    _jobs(jobs)
    free, placed, stranded = list(nodes_free), {}, 0
    for j in jobs:
        where = []
        for _ in range(j["pods"]):
            i = _binpack(free, j["gpus_per_pod"])
            if i is not None:
                free[i] -= j["gpus_per_pod"]
            where.append(i)
        if None in where:
            stranded += j["gpus_per_pod"] * sum(1 for i in where if i is not None)
        placed[j["name"]] = where
    return {"placed": placed, "free": free, "stranded": stranded}


def fragmentation(free, size):
    """Share of the free GPUs that no pod of `size` GPUs can use (0.0 when nothing is free)."""
    _free("free", free, False)
    if not _whole(size) or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    total = sum(free)
    if total == 0:
        return 0.0
    return (total - size * sum(f // size for f in free)) / total
