"""Reference solution for 171: a controller's reconcile step for a rolling update (level-triggered:
it looks only at the desired and the observed state) and the loop that runs it to convergence."""
import numbers

DESIRED_KEYS = {"replicas", "version", "max_surge", "max_unavailable"}


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _check(desired, observed):
    ok = isinstance(desired, dict) and set(desired) == DESIRED_KEYS and _whole(desired["replicas"]) \
        and desired["replicas"] >= 0 and isinstance(desired["version"], str) and desired["version"] != "" \
        and _whole(desired["max_surge"]) and desired["max_surge"] >= 0 \
        and _whole(desired["max_unavailable"]) and desired["max_unavailable"] >= 0
    if not ok or desired["max_surge"] + desired["max_unavailable"] < 1:
        raise ValueError(f"desired must be {{replicas >= 0, version: a name, max_surge >= 0, max_unavailable >= 0}} "
                         f"with max_surge + max_unavailable >= 1, got {desired!r}")
    ok = isinstance(observed, list) and all(
        isinstance(p, dict) and set(p) == {"name", "version", "ready"} and isinstance(p["name"], str)
        and p["name"] != "" and isinstance(p["version"], str) and p["version"] != "" and isinstance(p["ready"], bool)
        for p in observed)
    if not ok or len({p["name"] for p in observed}) != len(observed):
        raise ValueError(f"observed must be a list of {{name, version, ready: bool}} with distinct names, "
                         f"got {observed!r}")


def _reconcile(desired, observed):
    r, v = desired["replicas"], desired["version"]
    new = [p for p in observed if p["version"] == v]
    old = [p for p in observed if p["version"] != v]
    delete = []
    if len(new) > r:
        extra = sorted(new, key=lambda p: (p["ready"], [-ord(c) for c in p["name"]]))[:len(new) - r]
        delete += [p["name"] for p in extra]
        new = [p for p in new if p["name"] not in delete]
    create = max(0, min(r - len(new), r + desired["max_surge"] - len(new) - len(old)))
    delete += [p["name"] for p in old if not p["ready"]]
    old_ready = sorted((p for p in old if p["ready"]), key=lambda p: p["name"])
    ready = sum(1 for p in new if p["ready"]) + len(old_ready)
    k = max(0, min(len(old_ready), ready - (r - desired["max_unavailable"])))
    delete += [p["name"] for p in old_ready[:k]]
    return {"create": create, "delete": sorted(delete)}


def reconcile(desired, observed):
    """One reconcile step: which pods to delete and how many of the desired version to create."""
    _check(desired, observed)
    return _reconcile(desired, observed)


def converge(desired, observed, max_rounds):
    """Run reconcile until it asks for nothing and every pod is ready: each round deletes, makes every
    pod that existed before the round ready, and creates unready pods named '<version>-<n>'."""
    _check(desired, observed)
    if not _whole(max_rounds) or max_rounds < 0:
        raise ValueError(f"max_rounds must be an integer >= 0, got {max_rounds!r}")
    pods = [dict(p) for p in observed]
    min_ready = sum(p["ready"] for p in pods)
    counter, rounds = 0, 0
    while True:
        act = _reconcile(desired, pods)
        if act["create"] == 0 and not act["delete"] and all(p["ready"] for p in pods):
            break
        if rounds == max_rounds:
            rounds = -1
            break
        pods = [p for p in pods if p["name"] not in act["delete"]]
        min_ready = min(min_ready, sum(p["ready"] for p in pods))
        for p in pods:
            p["ready"] = True
        for _ in range(act["create"]):
            pods.append({"name": f"{desired['version']}-{counter}", "version": desired["version"], "ready": False})
            counter += 1
        rounds += 1
    return {"rounds": rounds, "min_ready": min_ready, "pods": sorted(p["name"] for p in pods)}
