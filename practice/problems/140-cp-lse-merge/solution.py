"""Reference solution for 140: context parallelism, attention over key chunks merged by their
log-sum-exp, and the causal work per rank for contiguous and zigzag layouts."""
import math
import numbers

import numpy as np

LAYOUTS = ("contiguous", "zigzag")


def _matrix(name, m, width=None, what="rows"):
    """A non-empty list of non-empty lists of finite numbers, all of one length (= width if given)."""
    ok = isinstance(m, list) and all(
        isinstance(r, list) and len(r) > 0 and all(
            not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x) for x in r) for r in m)
    if ok:
        widths = {len(r) for r in m}
        ok = len(widths) == 1 and (width is None or widths == {width})  # one width: m is not empty
    if not ok:
        raise ValueError(f"{name} must be a non-empty list of non-empty {what} of "
                         f"{'one length' if width is None else f'length {width}'} of finite numbers, got {m!r}")
    return np.array(m, dtype=float)


def partial_attention(q, k, v):
    """Softmax attention of each query over these keys only: the normalized output and the
    log-sum-exp of the scaled scores q.k / sqrt(d)."""
    q_ = _matrix("q", q)
    k_ = _matrix("k", k, q_.shape[1])
    v_ = _matrix("v", v)
    if len(v_) != len(k_):
        raise ValueError(f"v must have one row per key ({len(k_)}), got {len(v_)}")
    s = q_ @ k_.T / math.sqrt(q_.shape[1])
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    total = p.sum(axis=1, keepdims=True)
    out = p @ v_ / total
    lse = (m + np.log(total))[:, 0]
    return {"out": out.tolist(), "lse": lse.tolist()}


def merge_partials(outs, lses):
    """Attention over the union of the key chunks, from each chunk's output and log-sum-exp."""
    if not isinstance(outs, list) or not outs:
        raise ValueError(f"outs must be a non-empty list of matrices, got {outs!r}")
    mats = [_matrix("outs", x) for x in outs]
    if any(m.shape != mats[0].shape for m in mats):
        raise ValueError("outs: every partial must have the shape of the first")
    n = mats[0].shape[0]
    if not isinstance(lses, list) or len(lses) != len(outs) or any(
            not isinstance(r, list) or len(r) != n or any(
                isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) for x in r)
            for r in lses):
        raise ValueError(f"lses must hold one list of {n} finite numbers per partial ({len(outs)}), got {lses!r}")
    o = np.array(mats)
    s = np.array(lses, dtype=float)
    m = s.max(axis=0)
    w = np.exp(s - m)
    total = w.sum(axis=0)
    out = (w[:, :, None] * o).sum(axis=0) / total[:, None]
    return {"out": out.tolist(), "lse": (m + np.log(total)).tolist()}


def cp_causal_work(chunk_len, cp, layout):
    """Causal (query, key) pairs each of cp ranks computes: the sequence is 2 cp chunks of chunk_len
    tokens; rank r holds chunks 2r, 2r+1 (contiguous) or r, 2cp-1-r (zigzag), and sees every key."""
    for name, x in (("chunk_len", chunk_len), ("cp", cp)):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {x!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    work = []
    for r in range(cp):
        chunks = (2 * r, 2 * r + 1) if layout == "contiguous" else (r, 2 * cp - 1 - r)
        pairs = 0
        for c in chunks:
            start = c * chunk_len
            # query i sees keys 0 .. i: i + 1 of them
            pairs += sum(i + 1 for i in range(start, start + chunk_len))
        work.append(pairs)
    return work
