"""Reference solution for 136: a tensor-parallel SwiGLU MLP (column-parallel gate/up, row-parallel
down, one all-reduce), a vocab-parallel embedding, and a vocab-parallel greedy argmax."""
import math
import numbers

import numpy as np


def _matrix(name, m):
    if not isinstance(m, list) or not m or any(
            not isinstance(r, list) or not r or any(
                isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) for x in r)
            for r in m) or len({len(r) for r in m}) != 1:
        raise ValueError(f"{name} must be a non-empty list of non-empty rows of one length of finite numbers, "
                         f"got {m!r}")
    return np.array(m, dtype=float)


def _tp(tp):
    if isinstance(tp, bool) or not isinstance(tp, numbers.Integral) or tp < 1:
        raise ValueError(f"tp must be an integer >= 1, got {tp!r}")


def _silu(z):
    with np.errstate(over="ignore"):
        return z / (1.0 + np.exp(-z))


def tp_mlp(x, w_gate, w_up, w_down, tp):
    """Rank r holds columns r*I/tp .. of w_gate and w_up and the same rows of w_down; its partial
    output is (silu(x Wg_r) * (x Wu_r)) Wd_r; the all-reduce sums the partials."""
    a = _matrix("x", x)
    g, u, d = _matrix("w_gate", w_gate), _matrix("w_up", w_up), _matrix("w_down", w_down)
    if g.shape[0] != a.shape[1]:
        raise ValueError(f"w_gate must have one row per input feature ({a.shape[1]}), got {g.shape[0]}")
    if u.shape != g.shape:
        raise ValueError(f"w_up must have the gate's shape {g.shape[0]} x {g.shape[1]}, got {u.shape[0]} x {u.shape[1]}")
    if d.shape[0] != g.shape[1]:
        raise ValueError(f"w_down must have one row per intermediate feature ({g.shape[1]}), got {d.shape[0]}")
    _tp(tp)
    inter = g.shape[1]
    if inter % tp:
        raise ValueError(f"tp must divide the intermediate size ({inter}), got {tp}")
    shard = inter // tp
    partials = []
    for r in range(tp):
        cols = slice(r * shard, (r + 1) * shard)
        h = _silu(a @ g[:, cols]) * (a @ u[:, cols])
        partials.append(h @ d[cols, :])
    return {"partials": [p.tolist() for p in partials], "y": sum(partials).tolist()}


def _ids(ids, vocab):
    if not isinstance(ids, list) or not ids or any(
            isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < vocab for i in ids):
        raise ValueError(f"ids must be a non-empty list of token ids in [0, {vocab}), got {ids!r}")


def _shard(vocab, tp):
    return -(-vocab // tp)


def vocab_embedding(ids, table, tp):
    """Rank r holds rows r*s .. (r+1)*s - 1 of the table (s = ceil(V / tp)); it looks up the ids in
    its range and writes zeros for the others; the all-reduce sums the partials."""
    t = _matrix("table", table)
    _ids(ids, t.shape[0])
    _tp(tp)
    s = _shard(t.shape[0], tp)
    partials = []
    for r in range(tp):
        out = np.zeros((len(ids), t.shape[1]))
        for n, i in enumerate(ids):
            if r * s <= i < (r + 1) * s:
                out[n] = t[i]
        partials.append(out)
    return {"partials": [p.tolist() for p in partials], "out": sum(partials).tolist()}


def parallel_argmax(hidden, lm_head, tp):
    """Each rank scores its vocab shard (lm_head columns r*s ..) and reports [its best logit, that
    token's global id] per row (the lowest id on ties, [None, -1] for an empty shard); the greedy
    token is the best of those (the lowest id on ties)."""
    h, w = _matrix("hidden", hidden), _matrix("lm_head", lm_head)
    if w.shape[0] != h.shape[1]:
        raise ValueError(f"lm_head must have one row per hidden feature ({h.shape[1]}), got {w.shape[0]}")
    _tp(tp)
    vocab = w.shape[1]
    s = _shard(vocab, tp)
    local = []
    for r in range(tp):
        lo, hi = r * s, min((r + 1) * s, vocab)
        rows = []
        for n in range(h.shape[0]):
            if lo >= hi:
                rows.append([None, -1])
                continue
            logits = h[n] @ w[:, lo:hi]
            j = int(np.argmax(logits))
            rows.append([float(logits[j]), lo + j])
        local.append(rows)
    tokens = []
    for n in range(h.shape[0]):
        best = None
        for r in range(tp):
            value, idx = local[r][n]
            if idx >= 0 and (best is None or value > best[0]):
                best = (value, idx)
        tokens.append(best[1])
    return {"local": local, "tokens": tokens}
