"""Reference solution for 181: multi-LoRA batching: one base GEMM for the whole batch plus each
token's own low-rank update, the segments an SGMV kernel needs, and the extra FLOPs."""
import math
import numbers

import numpy as np


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _matrix(name, m):
    if not isinstance(m, list) or not m or any(
            not isinstance(r, list) or not r or any(
                isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) for v in r)
            for r in m) or len({len(r) for r in m}) != 1:
        raise ValueError(f"{name} must be a non-empty list of non-empty rows of one length of finite numbers, "
                         f"got {m!r}")
    return np.array(m, dtype=float)


def _ids(adapter_ids, count, length):
    if not isinstance(adapter_ids, list) or (length is not None and len(adapter_ids) != length) or any(
            not _whole(i) or not -1 <= i < count for i in adapter_ids):
        raise ValueError(f"adapter_ids must be a list of {'' if length is None else f'{length} '}adapter indices "
                         f"in [-1, {count}), got {adapter_ids!r}")


def lora_forward(x, w, adapters, adapter_ids):
    """y[i] = x[i] W + (alpha / r) (x[i] A) B for token i's adapter (none for -1)."""
    xs, base = _matrix("x", x), _matrix("w", w)
    if base.shape[0] != xs.shape[1]:
        raise ValueError(f"w must have one row per input feature ({xs.shape[1]}), got {base.shape[0]}")
    if not isinstance(adapters, list):
        raise ValueError("adapters must be a list")
    mats = []
    for ad in adapters:
        ok = isinstance(ad, dict) and set(ad) == {"a", "b", "alpha"} and not isinstance(ad["alpha"], bool) \
            and isinstance(ad["alpha"], numbers.Real) and math.isfinite(ad["alpha"]) and ad["alpha"] > 0
        a = b = None
        if ok:
            try:
                a, b = _matrix("adapters", ad["a"]), _matrix("adapters", ad["b"])
            except ValueError:
                ok = False
        if not ok or a.shape[0] != xs.shape[1] or b.shape != (a.shape[1], base.shape[1]):
            raise ValueError(f"adapters: each is {{a: {xs.shape[1]} x r, b: r x {base.shape[1]}, alpha > 0}}, "
                             f"got {ad!r}")
        mats.append((a, b, ad["alpha"] / a.shape[1]))
    _ids(adapter_ids, len(adapters), xs.shape[0])
    y = xs @ base
    for k, (a, b, scale) in enumerate(mats):
        rows = [i for i, j in enumerate(adapter_ids) if j == k]
        if rows:
            y[rows] += scale * ((xs[rows] @ a) @ b)
    return y.tolist()


def segments(adapter_ids):
    """The batch order that groups tokens by adapter (stable: by adapter, then position; base-only
    tokens, -1, first) and one [adapter, start, end) segment per adapter present."""
    if not isinstance(adapter_ids, list) or any(not _whole(i) or i < -1 for i in adapter_ids):
        raise ValueError(f"adapter_ids must be a list of integers >= -1, got {adapter_ids!r}")
    order = sorted(range(len(adapter_ids)), key=lambda i: (adapter_ids[i], i))
    segs = []
    for pos, i in enumerate(order):
        k = adapter_ids[i]
        if segs and segs[-1][0] == k:
            segs[-1][2] = pos + 1
        else:
            segs.append([k, pos, pos + 1])
    return {"order": order, "segments": segs}


def lora_flops(adapter_ids, ranks, d_in, d_out):
    """Base FLOPs 2 d_in d_out per token; a token with adapter k adds 2 r_k (d_in + d_out)."""
    if not isinstance(ranks, list) or any(not _whole(r) or r < 1 for r in ranks):
        raise ValueError(f"ranks must be a list of integers >= 1, got {ranks!r}")
    _ids(adapter_ids, len(ranks), None)
    for name, v in (("d_in", d_in), ("d_out", d_out)):
        if not _whole(v) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    base = 2 * d_in * d_out * len(adapter_ids)
    extra = sum(2 * ranks[k] * (d_in + d_out) for k in adapter_ids if k >= 0)
    return {"base": base, "lora": extra, "overhead": extra / base if base else 0.0}
