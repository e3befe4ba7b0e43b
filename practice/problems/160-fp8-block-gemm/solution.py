"""Reference solution for 160: FP8 (E4M3) rounding, block-scaled quantization, and a GEMM whose
operands are quantized per 1 x block tile (activations) and per block x block tile (weights)."""
import math
import numbers

import numpy as np

E4M3_MAX = 448.0
MIN_NORMAL_EXP = -6        # smallest normal: 2^-6; below it the spacing stays 2^-9 (subnormals)
MANTISSA_BITS = 3


def _round_e4m3(y):
    if y == 0:
        return 0.0
    _, e = math.frexp(abs(y))                 # |y| = m 2^e, 0.5 <= m < 1: floor(log2 |y|) = e - 1
    step = 2.0 ** (max(e - 1, MIN_NORMAL_EXP) - MANTISSA_BITS)
    r = round(y / step) * step                # y / step is exact; round() ties to even
    return math.copysign(min(abs(r), E4M3_MAX), y)


def _real(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def to_e4m3(values):
    """Each value rounded to the nearest FP8 E4M3 number (ties to even), saturated at +-448."""
    if not isinstance(values, list) or any(not _real(v) for v in values):
        raise ValueError(f"values must be a list of finite numbers, got {values!r}")
    return [_round_e4m3(float(v)) for v in values]


def _matrix(name, m):
    if not isinstance(m, list) or not m or any(not isinstance(r, list) or not r or any(not _real(x) for x in r)
                                               for r in m) or len({len(r) for r in m}) != 1:
        raise ValueError(f"{name} must be a non-empty list of non-empty rows of one length of finite numbers, "
                         f"got {m!r}")
    return np.array(m, dtype=float)


def _int(name, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {x!r}")


def _quantize(x, br, bc):
    rows, cols = x.shape
    nr, nc = -(-rows // br), -(-cols // bc)
    q = np.zeros_like(x)
    scales = np.ones((nr, nc))
    for i in range(nr):
        for j in range(nc):
            tile = x[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
            amax = float(np.abs(tile).max())
            s = amax / E4M3_MAX if amax > 0 else 1.0
            scales[i, j] = s
            q[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = np.vectorize(_round_e4m3)(tile / s)
    return q, scales


def quantize(matrix, block_rows, block_cols):
    """Per block_rows x block_cols tile (the last ones may be smaller): scale = amax / 448 (1.0 for an
    all-zero tile), q = E4M3(x / scale)."""
    x = _matrix("matrix", matrix)
    _int("block_rows", block_rows)
    _int("block_cols", block_cols)
    q, scales = _quantize(x, block_rows, block_cols)
    return {"q": q.tolist(), "scales": scales.tolist()}


def block_matmul(a, b, block):
    """C = A B with A quantized per 1 x block tile and B per block x block tile; each K-block's
    partial product is scaled by its two scales and accumulated in float64. Also the Frobenius
    relative error against the exact product."""
    x, w = _matrix("a", a), _matrix("b", b)
    if w.shape[0] != x.shape[1]:
        raise ValueError(f"b must have as many rows as a has columns ({x.shape[1]}), got {w.shape[0]}")
    _int("block", block)
    qa, sa = _quantize(x, 1, block)
    qb, sb = _quantize(w, block, block)
    k, n = w.shape
    c = np.zeros((x.shape[0], n))
    for kb in range(-(-k // block)):
        ks = slice(kb * block, (kb + 1) * block)
        partial = qa[:, ks] @ qb[ks, :]
        col_scale = np.repeat(sb[kb], block)[:n]
        c += partial * sa[:, kb:kb + 1] * col_scale[None, :]
    exact = x @ w
    norm = float(np.linalg.norm(exact))
    error = float(np.linalg.norm(c - exact)) / norm if norm > 0 else 0.0
    return {"c": c.tolist(), "rel_error": error}
