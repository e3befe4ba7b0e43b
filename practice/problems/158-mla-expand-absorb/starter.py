"""158. 估算：MLA 展开还是吸收。

Write the four functions below; see problem.md for the formulas and the worked example.
Judge with:  python practice/judge.py 158
"""


def expand_flops(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """FLOPs of one layer's expanded MLA attention (an int)."""
    raise NotImplementedError


def absorb_flops(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """FLOPs of one layer's absorbed MLA attention (an int)."""
    raise NotImplementedError


def choose_mla(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """Return {"mode", "expand_flops", "absorb_flops"}; "absorb" on a tie."""
    raise NotImplementedError


def crossover_query_tokens(context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """The smallest q in 1..context with expand_flops <= absorb_flops, or None."""
    raise NotImplementedError
