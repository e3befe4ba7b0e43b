"""Reference solution for 159: one decode step of MLA (multi-head latent attention), computed by
expanding the latent cache into per-head keys and values, and by absorbing the up-projections into
the query and the output; and the KV bytes per token either way."""
import math
import numbers

import numpy as np


def _is_real(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def _nested(x, depth):
    """True when x is a rectangular, non-empty nested list of finite numbers `depth` levels deep."""
    if depth == 0:
        return _is_real(x)
    return isinstance(x, list) and len(x) > 0 and all(_nested(y, depth - 1) for y in x)


def _array(name, x, depth):
    if not _nested(x, depth):
        raise ValueError(f"{name} must be a non-empty {depth}-level nested list of finite numbers, got {x!r}")
    try:
        a = np.array(x, dtype=float)
    except ValueError:
        a = None
    if a is None or a.ndim != depth:
        raise ValueError(f"{name} must be rectangular (every row of one length), got {x!r}")
    return a


def _inputs(q_nope, q_rope, c, k_rope, w_uk, w_uv):
    qn, qr = _array("q_nope", q_nope, 2), _array("q_rope", q_rope, 2)
    lat, kr = _array("c", c, 2), _array("k_rope", k_rope, 2)
    uk, uv = _array("w_uk", w_uk, 3), _array("w_uv", w_uv, 3)
    heads, nope = qn.shape
    if qr.shape[0] != heads:
        raise ValueError(f"q_rope must have one row per head ({heads}), got {qr.shape[0]}")
    if kr.shape != (lat.shape[0], qr.shape[1]):
        raise ValueError(f"k_rope must be {lat.shape[0]} x {qr.shape[1]} (a row per cached token, the "
                         f"query's rope width), got {kr.shape[0]} x {kr.shape[1]}")
    if uk.shape != (heads, lat.shape[1], nope):
        raise ValueError(f"w_uk must be {heads} x {lat.shape[1]} x {nope} (heads x kv_rank x nope_dim), "
                         f"got {' x '.join(map(str, uk.shape))}")
    if uv.shape[:2] != (heads, lat.shape[1]):
        raise ValueError(f"w_uv must be {heads} x {lat.shape[1]} x v_dim, got {' x '.join(map(str, uv.shape))}")
    return qn, qr, lat, kr, uk, uv


def _softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mla_expand(q_nope, q_rope, c, k_rope, w_uk, w_uv):
    """Per head: K_nope = c W_UK, V = c W_UV, then ordinary attention with the shared rope key."""
    qn, qr, lat, kr, uk, uv = _inputs(q_nope, q_rope, c, k_rope, w_uk, w_uv)
    scale = 1 / math.sqrt(qn.shape[1] + qr.shape[1])
    k_nope = np.einsum("cr,hrn->hcn", lat, uk)
    v = np.einsum("cr,hrv->hcv", lat, uv)
    scores = (np.einsum("hn,hcn->hc", qn, k_nope) + qr @ kr.T) * scale
    return np.einsum("hc,hcv->hv", _softmax(scores), v).tolist()


def mla_absorb(q_nope, q_rope, c, k_rope, w_uk, w_uv):
    """Per head: q_latent = W_UK q_nope, attention over the latent cache itself, then W_UV."""
    qn, qr, lat, kr, uk, uv = _inputs(q_nope, q_rope, c, k_rope, w_uk, w_uv)
    scale = 1 / math.sqrt(qn.shape[1] + qr.shape[1])
    q_latent = np.einsum("hrn,hn->hr", uk, qn)
    scores = (q_latent @ lat.T + qr @ kr.T) * scale
    o_latent = _softmax(scores) @ lat
    out = np.einsum("hr,hrv->hv", o_latent, uv)
    return {"q_latent": q_latent.tolist(), "o_latent": o_latent.tolist(), "out": out.tolist()}


def kv_bytes_per_token(heads, kv_rank, nope_dim, rope_dim, v_dim, dtype_bytes):
    """Bytes per token per layer: the latent and the shared rope key (MLA), or every head's key
    (nope + rope) and value (expanded, as in multi-head attention)."""
    for name, x, low in (("heads", heads, 1), ("kv_rank", kv_rank, 1), ("nope_dim", nope_dim, 1),
                         ("rope_dim", rope_dim, 0), ("v_dim", v_dim, 1), ("dtype_bytes", dtype_bytes, 1)):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {x!r}")
    mla = (kv_rank + rope_dim) * dtype_bytes
    expanded = heads * (nope_dim + rope_dim + v_dim) * dtype_bytes
    return {"mla": mla, "expanded": expanded, "ratio": expanded / mla}
