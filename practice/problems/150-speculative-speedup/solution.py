"""Reference solution for 150: estimating the speedup of speculative decoding."""
import math
import numbers


def _alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")


def _k(name, k, minimum):
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {k!r}")


def _cost(c):
    if isinstance(c, bool) or not isinstance(c, numbers.Real) or not math.isfinite(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c!r}")


def expected_tokens(alpha, k):
    """Tokens one verification step yields: 1 + alpha + ... + alpha**k."""
    _alpha(alpha)
    _k("k", k, 0)
    return float(sum(alpha ** i for i in range(k + 1)))


def speedup(alpha, k, c):
    """Speedup over plain decoding: expected_tokens / (k * c + 1)."""
    _alpha(alpha)
    _k("k", k, 1)
    _cost(c)
    return expected_tokens(alpha, k) / (k * c + 1)


def best_draft_len(alpha, c, k_max=16):
    """The draft length in 1..k_max with the largest speedup (the smallest k on ties)."""
    _alpha(alpha)
    _cost(c)
    _k("k_max", k_max, 1)
    best_k, best = 1, speedup(alpha, 1, c)
    for k in range(2, k_max + 1):
        s = speedup(alpha, k, c)
        if s > best:
            best_k, best = k, s
    return {"k": best_k, "speedup": best}
