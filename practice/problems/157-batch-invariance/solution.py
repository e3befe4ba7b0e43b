"""Reference solution for 157: why the same request gets different logits in different batches: a
float32 reduction split into a batch-dependent number of chunks, against a batch-invariant one."""
import math
import numbers

import numpy as np

POLICIES = ("split_k", "invariant")


def _reals(name, values, nonempty=True):
    if not isinstance(values, list) or (nonempty and not values) or any(
            isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) for v in values):
        raise ValueError(f"{name} must be a {'non-empty ' if nonempty else ''}list of finite numbers, got {values!r}")


def _reduce(products, splits):
    """Sum in float32: each of `splits` equal chunks left to right, then the partial sums left to right."""
    chunk = len(products) // splits
    total = np.float32(0)
    for s in range(splits):
        part = np.float32(0)
        for p in products[s * chunk:(s + 1) * chunk]:
            part = np.float32(part + p)
        total = np.float32(total + part)
    return total


def _dot(x, column, splits):
    products = [np.float32(np.float32(a) * np.float32(b)) for a, b in zip(x, column)]
    return float(_reduce(products, splits))


def reduce_f32(values, splits):
    """float32 sum of values split into `splits` equal chunks (splits divides the length)."""
    _reals("values", values)
    if isinstance(splits, bool) or not isinstance(splits, numbers.Integral) or splits < 1:
        raise ValueError(f"splits must be an integer >= 1, got {splits!r}")
    if len(values) % splits:
        raise ValueError(f"splits must divide the number of values ({len(values)}), got {splits}")
    return float(_reduce([np.float32(v) for v in values], splits))


def splits_for(batch, policy):
    """split-K heuristic: small batches split the reduction to keep the GPU busy; invariant: never."""
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if policy == "invariant":
        return 1
    return 4 if batch <= 4 else 2 if batch <= 32 else 1


def logits_by_batch(x, w, batch_sizes, policy):
    """One request's logits x @ w (float32, K split as the policy says for each batch size), its greedy
    token, and the largest difference from the logits at the first batch size."""
    _reals("x", x)
    if len(x) % 4:
        raise ValueError(f"x must have a length divisible by 4, got {len(x)}")
    if not isinstance(w, list) or len(w) != len(x) or any(
            not isinstance(r, list) or not r or len(r) != len(w[0]) for r in w):
        raise ValueError(f"w must be a list of {len(x)} rows of one non-zero length, got {w!r}")
    for r in w:
        _reals("w", r)
    if not isinstance(batch_sizes, list) or not batch_sizes:
        raise ValueError(f"batch_sizes must be a non-empty list of integers >= 1, got {batch_sizes!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    columns = list(zip(*w))
    rows, tokens = [], []
    for b in batch_sizes:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1:
            raise ValueError(f"batch_sizes must be a non-empty list of integers >= 1, got {batch_sizes!r}")
        s = splits_for(b, policy)
        row = [_dot(x, col, s) for col in columns]
        rows.append(row)
        best = 0
        for j in range(1, len(row)):
            if row[j] > row[best]:
                best = j
        tokens.append(best)
    diff = max(abs(a - b) for row in rows for a, b in zip(row, rows[0]))
    return {"logits": rows, "tokens": tokens, "max_abs_diff": diff}
