"""Reference solution for 153: KV-cache eviction, StreamingLLM (attention sinks + a recent window)
and H2O (heavy hitters by accumulated attention + a recent window)."""
import numbers

POLICIES = ("streaming", "h2o")


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def streaming_keep(seq_len, sink, window):
    """Positions StreamingLLM keeps after seq_len tokens: the first `sink` and the last `window`."""
    _int("seq_len", seq_len, 0)
    _int("sink", sink, 0)
    _int("window", window, 0)
    if seq_len <= sink + window:
        return list(range(seq_len))
    return list(range(sink)) + list(range(seq_len - window, seq_len))


def _scores(scores):
    if not isinstance(scores, list):
        raise ValueError("scores must be a list of rows")
    for t, row in enumerate(scores):
        if not isinstance(row, list) or len(row) != t + 1 or any(not _whole(x) or x < 1 for x in row):
            raise ValueError(f"scores: row {t} must be a list of {t + 1} integers >= 1, got {row!r}")


def run_eviction(scores, budget, policy, keep_recent):
    """Decode token by token with a KV budget; evict one token per step past it.

    Step t adds token t, then records the share of row t's score that falls on cached tokens and (H2O)
    adds each cached token's score to its running total; while the cache is over budget it evicts, among
    the tokens that are not the keep_recent newest: the oldest one past the sinks (streaming, sink =
    budget - keep_recent) or the smallest running total, oldest first on ties (h2o)."""
    _scores(scores)
    _int("budget", budget, 1)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if not _whole(keep_recent) or not 0 <= keep_recent < budget:
        raise ValueError(f"keep_recent must be an integer in [0, {budget - 1}] (fewer than the cache holds), "
                         f"got {keep_recent!r}")
    sink = budget - keep_recent
    cache, total = [], {}
    evicted, captured = [], []
    for t, row in enumerate(scores):
        cache.append(t)
        total[t] = 0
        captured.append(sum(row[j] for j in cache) / sum(row))
        for j in cache:
            total[j] += row[j]
        if len(cache) > budget:
            candidates = cache[:len(cache) - keep_recent]
            if policy == "streaming":
                victim = candidates[sink]
            else:
                victim = candidates[0]
                for j in candidates[1:]:
                    if total[j] < total[victim]:
                        victim = j
            cache.remove(victim)
            evicted.append(victim)
    return {"kept": cache, "evicted": evicted, "captured": captured}
