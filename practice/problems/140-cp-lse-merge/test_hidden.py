"""Hidden cases for 140: partial attention against a direct numpy softmax, merges equal to attention
over all keys (2 to 8 chunks, uneven chunks, one chunk, huge and tiny LSEs, associativity), causal work
per rank for both layouts at cp = 1 and larger, random cases vs the reference. Floats compared with
rtol=1e-7, atol=1e-9; work counts exactly."""
import math
import random

import numpy as np
import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL, ATOL = 1e-7, 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def close(got, expected):
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def mat(rng, rows, cols, scale=1.0):
    return [[rng.gauss(0, scale) for _ in range(cols)] for _ in range(rows)]


def direct(q, k, v):
    """Attention written the plain way, to check the reference itself."""
    q, k, v = np.array(q), np.array(k), np.array(v)
    s = q @ k.T / math.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


# --- partial_attention ------------------------------------------------------------------------

def test_one_key_returns_its_value():
    close(*both("partial_attention", [[0.3, -2.0]], [[1.0, 1.0]], [[4.0, -1.0, 2.0]]))


def test_equal_scores_average_the_values():
    close(*both("partial_attention", [[0.0, 0.0]], [[1.0, 2.0], [3.0, -4.0]], [[1.0], [3.0]]))


def test_scale_is_one_over_sqrt_d():
    # d = 4: scores 2 / 2 = 1 and 0, lse = log(e + 1)
    close(*both("partial_attention", [[1.0, 1.0, 1.0, 1.0]], [[0.5, 0.5, 0.5, 0.5], [0.0, 0.0, 0.0, 0.0]],
                [[1.0], [0.0]]))


def test_large_scores_do_not_overflow():
    close(*both("partial_attention", [[40.0, 40.0]], [[30.0, 30.0], [29.0, 30.0]], [[1.0], [2.0]]))


def test_several_queries_matches_direct_softmax():
    rng = random.Random(1)
    q, k, v = mat(rng, 5, 8), mat(rng, 7, 8), mat(rng, 7, 3)
    got, expected = both("partial_attention", q, k, v)
    if not np.allclose(expected["out"], direct(q, k, v), rtol=1e-12, atol=1e-12):
        raise RuntimeError("the reference differs from direct attention")
    close(got, expected)


# --- merge_partials ---------------------------------------------------------------------------

def _split_check(q, k, v, cuts):
    """Partials over key chunks (from the reference), merged by the learner, against the whole."""
    bounds = [0] + list(cuts) + [len(k)]
    parts = [reference.partial_attention(q, k[a:b], v[a:b]) for a, b in zip(bounds, bounds[1:])]
    whole = reference.partial_attention(q, k, v)
    merged = reference.merge_partials([p["out"] for p in parts], [p["lse"] for p in parts])
    if not (np.allclose(merged["out"], whole["out"], rtol=1e-10, atol=1e-12)
            and np.allclose(merged["lse"], whole["lse"], rtol=1e-12)):
        raise RuntimeError("the reference's merge differs from attention over all keys")
    got = call(submission, "merge_partials")([p["out"] for p in parts], [p["lse"] for p in parts])
    close(got, whole)


def test_merge_two_halves_equals_whole():
    rng = random.Random(2)
    _split_check(mat(rng, 3, 4), mat(rng, 8, 4), mat(rng, 8, 2), [4])


def test_merge_uneven_chunks_equals_whole():
    rng = random.Random(3)
    _split_check(mat(rng, 4, 16), mat(rng, 13, 16, 2.0), mat(rng, 13, 5), [1, 6, 12])


def test_merge_eight_ranks_equals_whole():
    rng = random.Random(4)
    _split_check(mat(rng, 2, 8), mat(rng, 32, 8, 3.0), mat(rng, 32, 4), [4, 8, 12, 16, 20, 24, 28])


def test_merge_one_partial_is_unchanged():
    close(*both("merge_partials", [[[1.5, -2.0]]], [[0.25]]))


def test_merge_huge_lses():
    close(*both("merge_partials", [[[1.0]], [[3.0]]], [[800.0], [801.0]]))
    close(*both("merge_partials", [[[1.0]], [[3.0]]], [[-800.0], [-799.5]]))


def test_merge_dominated_partial_barely_counts():
    close(*both("merge_partials", [[[1.0], [1.0]], [[5.0], [5.0]]], [[0.0, 0.0], [-40.0, 40.0]]))


def test_merge_is_associative():
    rng = random.Random(5)
    q, k, v = mat(rng, 3, 4), mat(rng, 9, 4), mat(rng, 9, 2)
    parts = [reference.partial_attention(q, k[a:a + 3], v[a:a + 3]) for a in (0, 3, 6)]
    merge = call(submission, "merge_partials")
    first = merge([parts[0]["out"], parts[1]["out"]], [parts[0]["lse"], parts[1]["lse"]])
    got = merge([first["out"], parts[2]["out"]], [first["lse"], parts[2]["lse"]])
    close(got, reference.partial_attention(q, k, v))


def test_merge_order_does_not_matter():
    rng = random.Random(6)
    outs = [mat(rng, 2, 3) for _ in range(4)]
    lses = [[rng.uniform(-5, 5) for _ in range(2)] for _ in range(4)]
    close(*both("merge_partials", outs[::-1], lses[::-1]))
    close(*both("merge_partials", outs, lses))


# --- cp_causal_work ---------------------------------------------------------------------------

def test_one_rank_holds_everything():
    check_close(*both("cp_causal_work", 5, 1, "contiguous"))
    check_close(*both("cp_causal_work", 5, 1, "zigzag"))


def test_one_token_chunks():
    check_close(*both("cp_causal_work", 1, 3, "contiguous"))
    check_close(*both("cp_causal_work", 1, 3, "zigzag"))


def test_two_ranks():
    check_close(*both("cp_causal_work", 3, 2, "contiguous"))
    check_close(*both("cp_causal_work", 3, 2, "zigzag"))


def test_long_prompt_eight_ranks():
    # 128k tokens over CP 8: chunks of 8192
    check_close(*both("cp_causal_work", 8192, 8, "contiguous"))
    check_close(*both("cp_causal_work", 8192, 8, "zigzag"))


def test_work_sums_to_all_causal_pairs():
    for layout in ("contiguous", "zigzag"):
        got = call(submission, "cp_causal_work")(7, 5, layout)
        expected = reference.cp_causal_work(7, 5, layout)
        n = 2 * 5 * 7
        if sum(expected) != n * (n + 1) // 2:
            raise RuntimeError("the reference's work does not add up")
        check_close(got, expected)


_rng = random.Random(140)
RANDOM = []
for _ in range(15):
    n, d, dv, m = _rng.randint(1, 4), _rng.choice([1, 2, 8, 16]), _rng.randint(1, 4), _rng.randint(1, 12)
    scale = _rng.choice([0.5, 1.0, 4.0])
    RANDOM.append((mat(_rng, n, d), mat(_rng, m, d, scale), mat(_rng, m, dv),
                   sorted(_rng.sample(range(1, m), _rng.randint(0, m - 1))) if m > 1 else [],
                   _rng.randint(1, 50), _rng.randint(1, 9)))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    q, k, v, cuts, chunk, cp = RANDOM[index]
    close(*both("partial_attention", q, k, v))
    _split_check(q, k, v, cuts)
    check_close(*both("cp_causal_work", chunk, cp, ["contiguous", "zigzag"][index % 2]))


# Cross-field and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("q", "partial_attention", ([[]], [[]], [[1.0]])),
    ("outs", "merge_partials", ([[[]]], [[0.0]])),
    ("q", "partial_attention", ([[1.0, 2.0], [1.0]], [[1.0, 2.0]], [[1.0]])),
    ("k", "partial_attention", ([[1.0, 2.0]], [[1.0]], [[1.0]])),
    ("k", "partial_attention", ([[1.0, 2.0]], [[1.0, 2.0], [1.0, 2.0, 3.0]], [[1.0], [2.0]])),
    ("v", "partial_attention", ([[1.0]], [[1.0], [2.0]], [[1.0]])),
    ("v", "partial_attention", ([[1.0]], [[1.0]], [[1.0], [2.0]])),
    ("v", "partial_attention", ([[1.0]], [[1.0], [2.0]], [[1.0, 2.0], [1.0]])),
    ("outs", "merge_partials", ([[[1.0]], [[1.0, 2.0]]], [[0.0], [0.0]])),
    ("outs", "merge_partials", ([[[1.0]], [[1.0], [2.0]]], [[0.0], [0.0]])),
    ("outs", "merge_partials", ([[[1.0, 2.0], [1.0]]], [[0.0, 0.0]])),
    ("lses", "merge_partials", ([[[1.0]], [[2.0]]], [[0.0]])),
    ("lses", "merge_partials", ([[[1.0]]], [[0.0], [0.0]])),
    ("lses", "merge_partials", ([[[1.0]], [[2.0]]], [[0.0], [0.0, 1.0]])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
