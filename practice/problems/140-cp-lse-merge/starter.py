"""140. 上下文并行：用 LSE 合并注意力。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 140
"""


def partial_attention(q, k, v):
    """Return {"out": [[...] per query], "lse": [... per query]} over these keys only."""
    raise NotImplementedError


def merge_partials(outs, lses):
    """Return {"out": [[...]], "lse": [...]}: attention over all the chunks together."""
    raise NotImplementedError


def cp_causal_work(chunk_len, cp, layout):
    """Return the number of causal (query, key) pairs each rank computes."""
    raise NotImplementedError
