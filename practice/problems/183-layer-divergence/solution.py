"""Reference solution for 183: finding the layer where a new implementation starts to disagree with
a reference one: per-layer relative error and cosine, the first layer past a tolerance, and the
probes a bisection makes when dumping a layer is expensive."""
import math
import numbers

import numpy as np

FLOOR = 1e-12


def _dumps(name, dumps):
    if not isinstance(dumps, list) or not dumps or any(
            not isinstance(r, list) or not r or any(
                isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) for x in r)
            for r in dumps):
        raise ValueError(f"{name} must be a non-empty list of non-empty lists of finite numbers, got {dumps!r}")


def _pair(ref, test):
    _dumps("ref", ref)
    _dumps("test", test)
    if len(test) != len(ref) or any(len(t) != len(r) for t, r in zip(test, ref)):
        raise ValueError("test must have the reference's shape: one vector of the same length per layer")


def _errors(ref, test):
    rel, cos = [], []
    for r, t in zip(ref, test):
        r_, t_ = np.array(r, dtype=float), np.array(t, dtype=float)
        nr, nt = float(np.linalg.norm(r_)), float(np.linalg.norm(t_))
        rel.append(float(np.linalg.norm(t_ - r_)) / max(nr, FLOOR))
        if nr == 0 and nt == 0:
            cos.append(1.0)
        elif nr == 0 or nt == 0:
            cos.append(0.0)
        else:
            cos.append(float(r_ @ t_) / (nr * nt))
    return rel, cos


def layer_errors(ref, test):
    """Per layer: ||test - ref|| / max(||ref||, 1e-12) and the cosine similarity (1.0 when both are
    zero, 0.0 when only one is)."""
    _pair(ref, test)
    rel, cos = _errors(ref, test)
    return {"rel_error": rel, "cosine": cos}


def first_divergence(ref, test, tol):
    """The first layer whose relative error exceeds tol (-1 when none), and that error."""
    _pair(ref, test)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not math.isfinite(tol) or tol <= 0:
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    rel, _ = _errors(ref, test)
    for i, e in enumerate(rel):
        if e > tol:
            return {"layer": i, "rel_error": e}
    return {"layer": -1, "rel_error": max(rel)}


def bisect_plan(num_layers, first_bad):
    """Layers probed by a bisection for the first bad layer, when every layer from first_bad on is bad
    (first_bad = -1: none is): lo, hi = 0, num_layers; probe mid = (lo + hi) // 2; bad -> hi = mid,
    good -> lo = mid + 1; until lo == hi."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, numbers.Integral) or num_layers < 1:
        raise ValueError(f"num_layers must be an integer >= 1, got {num_layers!r}")
    if isinstance(first_bad, bool) or not isinstance(first_bad, numbers.Integral) \
            or not -1 <= first_bad < num_layers:
        raise ValueError(f"first_bad must be -1 or a layer index below {num_layers}, got {first_bad!r}")
    lo, hi, probes = 0, num_layers, []
    while lo < hi:
        mid = (lo + hi) // 2
        probes.append(mid)
        if first_bad >= 0 and mid >= first_bad:
            hi = mid
        else:
            lo = mid + 1
    return {"probes": probes, "layer": lo if lo < num_layers else -1}
