"""Reference solution for 177: a GPU cluster shared by tenants with guaranteed quotas: jobs run when
GPUs are free, may borrow beyond their quota, and a job within its tenant's quota takes borrowed GPUs
back by preempting (lowest priority first, then the latest started)."""
import numbers

SUBMIT_KEYS = {"op", "job", "tenant", "gpus", "priority"}
FINISH_KEYS = {"op", "job"}


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _check(capacity, quotas, events):
    if not _whole(capacity) or capacity < 1:
        raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
    if not isinstance(quotas, dict) or any(not isinstance(k, str) or not k or not _whole(v) or v < 0
                                           for k, v in quotas.items()):
        raise ValueError(f"quotas must map tenant names to integers >= 0, got {quotas!r}")
    if sum(quotas.values()) > capacity:
        raise ValueError(f"quotas must add up to at most the cluster's {capacity} GPUs, got {sum(quotas.values())}")
    if not isinstance(events, list):
        raise ValueError("events must be a list")
    known, done = set(), set()
    for ev in events:
        ok = isinstance(ev, dict) and ev.get("op") in ("submit", "finish") and \
            set(ev) == (SUBMIT_KEYS if ev["op"] == "submit" else FINISH_KEYS) and isinstance(ev["job"], str) \
            and ev["job"] != ""
        if ok and ev["op"] == "submit":
            ok = ev["job"] not in known and isinstance(ev["tenant"], str) and ev["tenant"] in quotas \
                and _whole(ev["gpus"]) \
                and 1 <= ev["gpus"] <= capacity and _whole(ev["priority"])
            known.add(ev["job"])
        elif ok:
            ok = ev["job"] in known and ev["job"] not in done
            done.add(ev["job"])
        if not ok:
            raise ValueError(f"events: each is a new job's submit (a tenant with a quota entry, 1 <= gpus <= the "
                             f"cluster's GPUs, an integer priority) or the finish of a submitted, unfinished "
                             f"job, got {ev!r}")


def schedule(capacity, quotas, events):
    """Run the events in order; after each, start pending jobs that fit (highest priority first, then
    submit order). Returns the log, the running jobs and the pending queue."""
    _check(capacity, quotas, events)
    jobs, usage = {}, {t: 0 for t in quotas}
    running, pending = {}, []             # running: job -> start sequence; pending: jobs by submit order
    log, free, seq, order = [], capacity, 0, {}

    def start(j):
        nonlocal free, seq
        running[j] = seq
        seq += 1
        free -= jobs[j]["gpus"]
        usage[jobs[j]["tenant"]] += jobs[j]["gpus"]
        log.append(["run", j])

    def stop(j):
        nonlocal free
        del running[j]
        free += jobs[j]["gpus"]
        usage[jobs[j]["tenant"]] -= jobs[j]["gpus"]

    def victims(need):
        use, chosen, room = dict(usage), [], free
        while room < need:
            cands = [j for j in running if j not in chosen and use[jobs[j]["tenant"]] > quotas[jobs[j]["tenant"]]]
            if not cands:
                return None
            v = min(cands, key=lambda j: (jobs[j]["priority"], -running[j]))
            chosen.append(v)
            use[jobs[v]["tenant"]] -= jobs[v]["gpus"]
            room += jobs[v]["gpus"]
        return chosen

    for ev in events:
        j = ev["job"]
        if ev["op"] == "submit":
            jobs[j], order[j] = ev, len(order)
            g, t = ev["gpus"], ev["tenant"]
            if free >= g:
                start(j)
            else:
                chosen = victims(g) if usage[t] + g <= quotas[t] else None
                if chosen is None:
                    pending.append(j)
                    log.append(["wait", j])
                else:
                    for v in chosen:
                        stop(v)
                        pending.append(v)
                        log.append(["preempt", v])
                    start(j)
        elif j in running:
            stop(j)
            log.append(["finish", j])
        else:
            pending.remove(j)
            log.append(["cancel", j])
        for p in sorted(pending, key=lambda x: (-jobs[x]["priority"], order[x])):
            if jobs[p]["gpus"] <= free:
                pending.remove(p)
                start(p)
    queue = sorted(pending, key=lambda x: (-jobs[x]["priority"], order[x]))
    return {"log": log, "running": sorted(running), "pending": queue}
