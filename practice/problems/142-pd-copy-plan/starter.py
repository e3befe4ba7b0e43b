"""142. PD 分离的拷贝计划。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 142
"""


def copy_plan(block_pairs, block_bytes, cached_blocks=0):
    """Return [[src_offset, dst_offset, nbytes], ...]: one copy per run of consecutive blocks."""
    raise NotImplementedError


def tp_plan(num_kv_heads, prefill_tp, decode_tp):
    """Return, for each decode rank, its [[src_rank, head_lo, head_hi], ...] pieces."""
    raise NotImplementedError


def rank_bytes(num_kv_heads, prefill_tp, decode_tp, tokens, layers, head_dim, dtype_bytes):
    """Return {"send_bytes": [per prefill rank], "recv_bytes": [per decode rank]}."""
    raise NotImplementedError
