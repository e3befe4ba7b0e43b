"""Reference solution for 166: the delta rule of DeltaNet-style linear attention, token by token and
chunk by chunk (the WY/UT form used by chunked kernels), and its constant state size."""
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


def _inputs(q, k, v, beta):
    q_, k_, v_ = _matrix("q", q), _matrix("k", k), _matrix("v", v)
    if k_.shape != q_.shape:
        raise ValueError(f"k must have the shape of q ({q_.shape[0]} x {q_.shape[1]}), got {k_.shape[0]} x {k_.shape[1]}")
    if v_.shape[0] != q_.shape[0]:
        raise ValueError(f"v must have one row per token ({q_.shape[0]}), got {v_.shape[0]}")
    if not isinstance(beta, list) or len(beta) != q_.shape[0] or any(
            isinstance(b, bool) or not isinstance(b, numbers.Real) or not 0 <= b <= 1 for b in beta):
        raise ValueError(f"beta must be a list of {q_.shape[0]} numbers in [0, 1] (one per token), got {beta!r}")
    return q_, k_, v_, np.array(beta, dtype=float)


def delta_recurrent(q, k, v, beta):
    """S_t = S_{t-1} + beta_t (v_t - S_{t-1} k_t) k_t^T from S_0 = 0, o_t = S_t q_t."""
    q_, k_, v_, b = _inputs(q, k, v, beta)
    s = np.zeros((v_.shape[1], k_.shape[1]))
    out = []
    for t in range(len(q_)):
        s = s + b[t] * np.outer(v_[t] - s @ k_[t], k_[t])
        out.append(s @ q_[t])
    return {"out": np.array(out).tolist(), "state": s.tolist()}


def delta_chunked(q, k, v, beta, chunk):
    """The same outputs, `chunk` tokens at a time: T = (I + tril(diag(beta) K K^T, -1))^-1 diag(beta),
    W = T K, U = T V; with the state S entering the chunk, U' = U - W S^T, the outputs are
    Q S^T + (tril(Q K^T)) U' and the state leaves as S + U'^T K."""
    q_, k_, v_, b = _inputs(q, k, v, beta)
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    s = np.zeros((v_.shape[1], k_.shape[1]))
    out = []
    for start in range(0, len(q_), chunk):
        qc, kc, vc, bc = q_[start:start + chunk], k_[start:start + chunk], v_[start:start + chunk], b[start:start + chunk]
        n = len(qc)
        a = np.tril(bc[:, None] * (kc @ kc.T), -1)
        t = np.linalg.solve(np.eye(n) + a, np.diag(bc))
        u = t @ vc - (t @ kc) @ s.T
        out.append(qc @ s.T + np.tril(qc @ kc.T) @ u)
        s = s + u.T @ kc
    return {"out": np.concatenate(out).tolist(), "state": s.tolist()}


def state_vs_kv(heads, key_dim, value_dim, layers, dtype_bytes, kv_bytes_per_token):
    """Bytes of the delta-rule state per sequence (heads x key_dim x value_dim per layer) and the
    context length at which a KV cache of kv_bytes_per_token would need as much."""
    for name, x in (("heads", heads), ("key_dim", key_dim), ("value_dim", value_dim), ("layers", layers),
                    ("dtype_bytes", dtype_bytes)):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {x!r}")
    if isinstance(kv_bytes_per_token, bool) or not isinstance(kv_bytes_per_token, numbers.Real) \
            or not math.isfinite(kv_bytes_per_token) or kv_bytes_per_token <= 0:
        raise ValueError(f"kv_bytes_per_token must be a finite number > 0, got {kv_bytes_per_token!r}")
    state = heads * key_dim * value_dim * layers * dtype_bytes
    return {"state_bytes": state, "equal_kv_tokens": state / kv_bytes_per_token}
