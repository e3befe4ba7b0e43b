"""166. 分块计算 DeltaNet。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 166
"""


def delta_recurrent(q, k, v, beta):
    """Return {"out": T x dv, "state": dv x dk}, token by token."""
    raise NotImplementedError


def delta_chunked(q, k, v, beta, chunk):
    """Return the same {"out", "state"}, computed chunk by chunk."""
    raise NotImplementedError


def state_vs_kv(heads, key_dim, value_dim, layers, dtype_bytes, kv_bytes_per_token):
    """Return {"state_bytes": int, "equal_kv_tokens": float}."""
    raise NotImplementedError
