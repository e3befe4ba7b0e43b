"""183. 逐层定位数值分歧。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 183
"""


def layer_errors(ref, test):
    """Return {"rel_error": [...], "cosine": [...]}, one value per layer."""
    raise NotImplementedError


def first_divergence(ref, test, tol):
    """Return {"layer": first layer past tol or -1, "rel_error": float}."""
    raise NotImplementedError


def bisect_plan(num_layers, first_bad):
    """Return {"probes": [layers probed, in order], "layer": the first bad layer or -1}."""
    raise NotImplementedError
