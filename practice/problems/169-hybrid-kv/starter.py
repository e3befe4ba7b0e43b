"""169. 估算：压缩、稀疏与滑动窗口注意力的 KV。

Write the three functions below; see problem.md for the table of layer kinds and the worked example.
Judge with:  python practice/judge.py 169
"""


def layer_bytes_per_token(attention, *, dtype_bytes, kv_heads=0, head_dim=0, kv_rank=0, rope_dim=0):
    """KV bytes of one token in one layer: "gqa" 2 * kv_heads * head_dim * dtype_bytes,
    "mla" (kv_rank + rope_dim) * dtype_bytes."""
    raise NotImplementedError


def kv_bytes(context, layers):
    """Return {"stored_bytes", "read_bytes"} of one sequence of context tokens."""
    raise NotImplementedError


def max_context(budget_bytes, layers):
    """The largest context whose stored bytes are <= budget_bytes, or None if every length fits."""
    raise NotImplementedError
