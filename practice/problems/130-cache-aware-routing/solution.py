"""Reference solution for 130: cache-aware request routing (prefix match, load balance fallback)."""
import math
import numbers


def _common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def route_requests(requests, num_workers, *, cache_threshold=0.5, balance_abs=4, balance_rel=1.5):
    """The worker of every request, in order: longest cached prefix unless the pool is out of
    balance or the best match is too short, else the least loaded worker."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 1:
        raise ValueError(f"num_workers must be an integer >= 1, got {num_workers!r}")
    if isinstance(cache_threshold, bool) or not isinstance(cache_threshold, numbers.Real) or not 0 <= cache_threshold <= 1:
        raise ValueError(f"cache_threshold must be in [0, 1], got {cache_threshold!r}")
    if isinstance(balance_abs, bool) or not isinstance(balance_abs, numbers.Integral) or balance_abs < 0:
        raise ValueError(f"balance_abs must be an integer >= 0, got {balance_abs!r}")
    if isinstance(balance_rel, bool) or not isinstance(balance_rel, numbers.Real) or not math.isfinite(balance_rel) \
            or balance_rel < 1:
        raise ValueError(f"balance_rel must be a finite number >= 1, got {balance_rel!r}")
    if not isinstance(requests, list):
        raise ValueError("requests must be a list")
    for r in requests:
        if not isinstance(r, dict) or set(r) != {"prompt", "hold"} or not isinstance(r["prompt"], list) \
                or len(r["prompt"]) == 0 or isinstance(r["hold"], bool) or not isinstance(r["hold"], numbers.Integral) \
                or r["hold"] < 0:
            raise ValueError(f"requests: each request is {{prompt: non-empty list, hold: integer >= 0}}, got {r!r}")
    seen = [[] for _ in range(num_workers)]          # prompts each worker has served
    busy_until = []                                    # (worker, index of the last request it holds)
    out = []
    for i, r in enumerate(requests):
        load = [0] * num_workers
        for w, until in busy_until:
            if until >= i:
                load[w] += 1
        least = min(range(num_workers), key=lambda w: (load[w], w))
        hi, lo = max(load), min(load)
        if hi - lo > balance_abs and hi > balance_rel * lo:
            choice = least
        else:
            match = [max((_common_prefix(r["prompt"], p) for p in seen[w]), default=0) for w in range(num_workers)]
            best = min(range(num_workers), key=lambda w: (-match[w], load[w], w))
            choice = best if match[best] / len(r["prompt"]) > cache_threshold else least
        seen[choice].append(r["prompt"])
        busy_until.append((choice, i + r["hold"]))
        out.append(choice)
    return out
