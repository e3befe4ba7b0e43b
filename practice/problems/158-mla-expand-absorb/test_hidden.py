"""Hidden cases for 158: both FLOP counts (the expanded attention term checked against the
simulator's DeepSeek-V3 preset), the choice on both sides of the crossover and on exact ties, the
crossover at 1, at context, None, and for huge contexts, invalid inputs and random inputs.
Integers and strings compared exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error

DS = dict(heads=128, kv_rank=512, nope_dim=128, rope_dim=64, v_dim=128)


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def check_optional(got, expected):
    if expected is None:
        if got is not None:
            raise Mismatch("exact", path="result")
    else:
        check_close(got, expected)


@pytest.mark.parametrize("name", ["expand_flops", "absorb_flops"])
@pytest.mark.parametrize("q,context", [(1, 4096), (4096, 4096), (512, 131072), (1, 1)],
                         ids=["decode_4k", "prefill_4k", "chunk_of_128k", "single_token"])
def test_counts_deepseek(name, q, context):
    got, expected = both(name, q, context, **DS)
    check_close(got, expected)


@pytest.mark.parametrize("name", ["expand_flops", "absorb_flops"])
def test_counts_without_rope(name):
    got, expected = both(name, 7, 9, heads=3, kv_rank=5, nope_dim=2, rope_dim=0, v_dim=4)
    check_close(got, expected)


@pytest.mark.parametrize("name", ["expand_flops", "absorb_flops"])
def test_counts_uneven_dims(name):
    got, expected = both(name, 3, 11, heads=2, kv_rank=13, nope_dim=5, rope_dim=7, v_dim=17)
    check_close(got, expected)


def test_expand_attention_term_matches_simulator():
    """expand(q + 1) - expand(q) = 2 x context x heads x (nope + rope + v) per layer; times the layers it
    is the simulator's prefill attention FLOPs per (query, key) pair for DeepSeek-V3, times context."""
    from sim import presets
    m = presets.model("deepseek-v3")
    shape = dict(heads=m.heads, kv_rank=m.kv_lora_rank, nope_dim=m.nope_dim, rope_dim=m.rope_dim,
                 v_dim=m.v_head_dim)
    context = 1000
    assert (reference.expand_flops(2, context, **shape) - reference.expand_flops(1, context, **shape)) * m.layers \
        == m.attention_flops_per_pair() * context
    f = call(submission, "expand_flops")
    got = (f(2, context, **shape) - f(1, context, **shape)) * m.layers
    check_close(got, m.attention_flops_per_pair() * context)


def test_choose_decode_absorbs():
    got, expected = both("choose_mla", 1, 4096, **DS)
    check_close(got, expected)


def test_choose_at_crossover_expands():
    got, expected = both("choose_mla", 164, 4096, **DS)
    check_close(got, expected)


def test_choose_just_below_crossover_absorbs():
    got, expected = both("choose_mla", 163, 4096, **DS)
    check_close(got, expected)


def test_choose_exact_tie_is_absorb():
    # kv_rank 2, nope 1, v 1, no rope: at q = 1, context = 2 both are 24 FLOPs
    shape = dict(heads=1, kv_rank=2, nope_dim=1, rope_dim=0, v_dim=1)
    assert reference.expand_flops(1, 2, **shape) == reference.absorb_flops(1, 2, **shape)
    got, expected = both("choose_mla", 1, 2, **shape)
    check_close(got, expected)


def test_choose_tie_at_full_context():
    shape = dict(heads=3, kv_rank=64, nope_dim=64, rope_dim=0, v_dim=64)
    got, expected = both("choose_mla", 3118, 3118, **shape)
    check_close(got, expected)


def test_choose_one_below_full_context():
    shape = dict(heads=3, kv_rank=64, nope_dim=64, rope_dim=0, v_dim=64)
    got, expected = both("choose_mla", 3117, 3118, **shape)
    check_close(got, expected)


CROSS = [
    ("deepseek_128k", 131072, DS),
    ("deepseek_tiny_context", 1, DS),
    ("deepseek_two_tokens", 2, DS),
    ("tie_at_q1", 3, dict(heads=1, kv_rank=3, nope_dim=1, rope_dim=0, v_dim=1)),
    ("tie_at_q1_context2", 2, dict(heads=1, kv_rank=2, nope_dim=1, rope_dim=0, v_dim=1)),
    ("below_tie_context_still_q1", 2, dict(heads=1, kv_rank=3, nope_dim=1, rope_dim=0, v_dim=1)),
    ("at_full_context", 5, dict(heads=1, kv_rank=51, nope_dim=22, rope_dim=2, v_dim=30)),
    ("at_full_context_4", 4, dict(heads=1, kv_rank=51, nope_dim=22, rope_dim=2, v_dim=30)),
    ("d_negative_slope_positive_past_context", 5, dict(heads=2, kv_rank=10, nope_dim=11, rope_dim=3, v_dim=10)),
    ("d_negative_slope_one", 209, dict(heads=2, kv_rank=10, nope_dim=11, rope_dim=3, v_dim=10)),
    ("d_zero_equal_at_context", 3118, dict(heads=3, kv_rank=64, nope_dim=64, rope_dim=0, v_dim=64)),
    ("d_negative_never", 4096, dict(heads=8, kv_rank=32, nope_dim=64, rope_dim=16, v_dim=64)),
    ("slope_exactly_zero", 210, dict(heads=2, kv_rank=10, nope_dim=11, rope_dim=3, v_dim=10)),
    ("slope_negative", 3, dict(heads=1, kv_rank=1, nope_dim=2, rope_dim=0, v_dim=3)),
    ("huge_context", 10**9, DS),
]


@pytest.mark.parametrize("context,shape", [c[1:] for c in CROSS], ids=[c[0] for c in CROSS])
def test_crossover(context, shape):
    got, expected = both("crossover_query_tokens", context, **shape)
    check_optional(got, expected)


BAD = [
    ("query_tokens", "expand_flops", (0, 10), DS),
    ("query_tokens", "expand_flops", (1.0, 10), DS),
    ("query_tokens", "expand_flops", (True, 10), DS),
    ("query_tokens", "expand_flops", (11, 10), DS),
    ("context", "expand_flops", (1, 0), DS),
    ("context", "absorb_flops", (1, 2.5), DS),
    ("query_tokens", "absorb_flops", (3, 2), DS),
    ("heads", "absorb_flops", (1, 10), dict(DS, heads=0)),
    ("kv_rank", "expand_flops", (1, 10), dict(DS, kv_rank=0)),
    ("nope_dim", "expand_flops", (1, 10), dict(DS, nope_dim=0)),
    ("rope_dim", "expand_flops", (1, 10), dict(DS, rope_dim=-1)),
    ("rope_dim", "absorb_flops", (1, 10), dict(DS, rope_dim=64.0)),
    ("v_dim", "absorb_flops", (1, 10), dict(DS, v_dim=0)),
    ("heads", "choose_mla", (1, 10), dict(DS, heads=True)),
    ("query_tokens", "choose_mla", (20, 10), DS),
    ("context", "crossover_query_tokens", (0,), DS),
    ("context", "crossover_query_tokens", (4096.0,), DS),
    ("kv_rank", "crossover_query_tokens", (10,), dict(DS, kv_rank=-512)),
    ("nope_dim", "crossover_query_tokens", (10,), dict(DS, nope_dim=0)),
    ("rope_dim", "crossover_query_tokens", (10,), dict(DS, rope_dim=-64)),
    ("v_dim", "crossover_query_tokens", (10,), dict(DS, v_dim=1.5)),
    ("heads", "crossover_query_tokens", (10,), dict(DS, heads=0)),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_smallest_shape():
    shape = dict(heads=1, kv_rank=1, nope_dim=1, rope_dim=0, v_dim=1)
    got, expected = both("choose_mla", 1, 1, **shape)
    check_close(got, expected)
    got, expected = both("crossover_query_tokens", 1, **shape)
    check_optional(got, expected)


def _random(n, seed=158):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        shape = dict(heads=rng.randint(1, 128), kv_rank=rng.choice([32, 64, 128, 256, 512, 1024]),
                     nope_dim=rng.choice([32, 64, 128, 192]), rope_dim=rng.choice([0, 32, 64]),
                     v_dim=rng.choice([32, 64, 128, 192]))
        context = rng.randint(1, 200000)
        out.append((rng.randint(1, context), context, shape))
    return out


RANDOM = _random(20)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    q, context, shape = RANDOM[index]
    got, expected = both("choose_mla", q, context, **shape)
    check_close(got, expected)
    got, expected = both("crossover_query_tokens", context, **shape)
    check_optional(got, expected)
