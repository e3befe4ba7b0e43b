"""Reference solution for 158: MLA attention, expanded versus absorbed."""
import numbers


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _shape(heads, kv_rank, nope_dim, rope_dim, v_dim):
    _integer("heads", heads, 1)
    _integer("kv_rank", kv_rank, 1)
    _integer("nope_dim", nope_dim, 1)
    _integer("rope_dim", rope_dim, 0)
    _integer("v_dim", v_dim, 1)


def _tokens(query_tokens, context):
    _integer("query_tokens", query_tokens, 1)
    _integer("context", context, 1)
    if query_tokens > context:
        raise ValueError(f"query_tokens ({query_tokens}) must be <= context ({context})")


def expand_flops(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """One layer, expanded: decompress K and V for every context token, then attend per head."""
    _tokens(query_tokens, context)
    _shape(heads, kv_rank, nope_dim, rope_dim, v_dim)
    decompress = 2 * context * kv_rank * heads * (nope_dim + v_dim)
    attend = 2 * query_tokens * context * heads * (nope_dim + rope_dim + v_dim)
    return decompress + attend


def absorb_flops(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """One layer, absorbed: fold W_UK into the queries and W_UV into the output, attend in the latent."""
    _tokens(query_tokens, context)
    _shape(heads, kv_rank, nope_dim, rope_dim, v_dim)
    fold = 2 * query_tokens * heads * kv_rank * (nope_dim + v_dim)
    attend = 2 * query_tokens * context * heads * (2 * kv_rank + rope_dim)
    return fold + attend


def choose_mla(query_tokens, context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """The cheaper mode for this step ("absorb" on a tie) and both counts."""
    shape = dict(heads=heads, kv_rank=kv_rank, nope_dim=nope_dim, rope_dim=rope_dim, v_dim=v_dim)
    expand = expand_flops(query_tokens, context, **shape)
    absorb = absorb_flops(query_tokens, context, **shape)
    return {"mode": "expand" if expand < absorb else "absorb", "expand_flops": expand,
            "absorb_flops": absorb}


def crossover_query_tokens(context, *, heads, kv_rank, nope_dim, rope_dim, v_dim):
    """The fewest query tokens (1..context) at which expanding costs no more than absorbing."""
    _integer("context", context, 1)
    _shape(heads, kv_rank, nope_dim, rope_dim, v_dim)
    a = kv_rank * (nope_dim + v_dim)
    d = 2 * kv_rank - nope_dim - v_dim
    # expand <= absorb  <=>  a (context - q) <= q context d  <=>  a context <= q (a + context d)
    slope = a + context * d
    if slope <= 0:
        return None
    q = -(-a * context // slope)
    return q if q <= context else None
