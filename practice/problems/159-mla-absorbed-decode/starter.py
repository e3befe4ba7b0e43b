"""159. MLA 的吸收式 decode。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 159
"""


def mla_expand(q_nope, q_rope, c, k_rope, w_uk, w_uv):
    """Return the attention output, heads x v_dim, computed by expanding the latent cache."""
    raise NotImplementedError


def mla_absorb(q_nope, q_rope, c, k_rope, w_uk, w_uv):
    """Return {"q_latent": heads x kv_rank, "o_latent": heads x kv_rank, "out": heads x v_dim}."""
    raise NotImplementedError


def kv_bytes_per_token(heads, kv_rank, nope_dim, rope_dim, v_dim, dtype_bytes):
    """Return {"mla": int, "expanded": int, "ratio": float}: KV bytes per token per layer."""
    raise NotImplementedError
