"""Reference solution for 152: speculative decoding's rejection-sampling verification (seeded)."""
import math
import numbers

import numpy as np


def _rows(name, rows, vocab=None):
    """A list of probability rows over one vocabulary; returns the vocabulary size."""
    if not isinstance(rows, list):
        raise ValueError(f"{name} must be a list of probability lists")
    for row in rows:
        if not isinstance(row, list) or len(row) == 0 or (vocab is not None and len(row) != vocab):
            raise ValueError(f"{name}: every row is a non-empty list, all of one vocabulary size")
        vocab = len(row)
        for x in row:
            if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x < 0:
                raise ValueError(f"{name}: probabilities are finite numbers >= 0, got {x!r}")
        if not math.isclose(math.fsum(row), 1.0, abs_tol=1e-6):
            raise ValueError(f"{name}: every row must sum to 1 (within 1e-6)")
    return vocab


def _check(p, q):
    vocab = _rows("p", p)
    _rows("q", q, vocab)
    if len(p) != len(q) + 1:
        raise ValueError(f"p must have one row more than q (the bonus position), got {len(p)} and {len(q)}")


def _sample(weights, u):
    """The smallest j with u * R < c_j, c the running sums of weights and R the last of them."""
    sums = np.cumsum(weights)
    return int(np.argmax(u * sums[-1] < sums))


def verify(p, q, draft, seed):
    """Accept draft[i] while a uniform draw u < p[i][x] / q[i][x]; on the first rejection sample
    the normalised residual max(0, p - q) (p itself when it is all zero); after k acceptances
    sample the bonus token from p[k]. One numpy draw per test or sample, in that order."""
    _check(p, q)
    if not isinstance(draft, list) or len(draft) != len(q):
        raise ValueError("draft must be a list with one token per row of q")
    for i, x in enumerate(draft):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= x < len(q[i]) or q[i][x] <= 0:
            raise ValueError(f"draft: token {x!r} at position {i} is not a token the draft could sample")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    tokens = []
    for i, x in enumerate(draft):
        if rng.random() < p[i][x] / q[i][x]:
            tokens.append(x)
            continue
        residual = [max(0.0, a - b) for a, b in zip(p[i], q[i])]
        if not any(residual):
            residual = p[i]
        tokens.append(_sample(residual, rng.random()))
        return {"accepted": i, "tokens": tokens}
    tokens.append(_sample(p[len(draft)], rng.random()))
    return {"accepted": len(draft), "tokens": tokens}


def expected_accepted(p, q):
    """Expected number of accepted draft tokens: sum over i of alpha_0 x ... x alpha_(i-1), where
    alpha_i = sum_j min(p[i][j], q[i][j]) is the chance that position i is accepted."""
    _check(p, q)
    total, reach = 0.0, 1.0
    for a, b in zip(p, q):
        reach *= sum(min(x, y) for x, y in zip(a, b))
        total += reach
    return total
