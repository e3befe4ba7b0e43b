"""Hidden cases for 157: float32 sums where the chunking changes the result (cancellation, small terms
lost next to large ones), one chunk per value, integers; the split heuristic on both sides of 4 and 32;
logits that flip the greedy token with the batch size, ties to the lower index, the invariant policy
giving one answer; random float32 rows vs the reference (and the reference checked: the invariant
policy never differs across batch sizes, its sums are sequential float32). Everything exactly."""
import random

import numpy as np
import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def exact(got, expected):
    check_close(got, expected, rtol=0)


def test_cancellation_depends_on_chunks():
    for s in (1, 2, 4):
        exact(*both("reduce_f32", [1e8, 1.0, -1e8, 1.0], s))


def test_small_terms_lost_next_to_a_large_one():
    values = [1.0] * 15 + [1e8]
    for s in (1, 2, 4, 8, 16):
        exact(*both("reduce_f32", values, s))
    exact(*both("reduce_f32", values[::-1], 4))


def test_not_pairwise():
    values = [0.1] * 1024
    exact(*both("reduce_f32", values, 1))
    exact(*both("reduce_f32", values, 8))


def test_products_rounded_before_adding():
    exact(*both("logits_by_batch", [0.1, 0.2, 0.3, 0.4], [[0.3], [0.7], [1.1], [1.3]], [64], "split_k"))


def test_integers_and_single_value():
    exact(*both("reduce_f32", [3], 1))
    exact(*both("reduce_f32", [1, 2, 3, 4], 2))


def test_split_heuristic_edges():
    for b in (1, 4, 5, 32, 33, 10000):
        exact(*both("splits_for", b, "split_k"))
        exact(*both("splits_for", b, "invariant"))


def test_token_flips_with_the_batch_size():
    x = [1e8, 1.0, -1e8, 1.0]
    w = [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.5]]
    exact(*both("logits_by_batch", x, w, [1, 4, 5, 32, 33], "split_k"))
    exact(*both("logits_by_batch", x, w, [33, 1], "split_k"))


def test_invariant_policy_is_one_answer():
    x = [1e8, 1.0, -1e8, 1.0]
    w = [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.5]]
    exact(*both("logits_by_batch", x, w, [1, 8, 64], "invariant"))


def test_greedy_tie_goes_to_the_lower_index():
    exact(*both("logits_by_batch", [1.0, 1.0, 1.0, 1.0], [[1.0, 1.0, 0.5]] * 4, [1], "split_k"))


def test_single_batch_size_diff_zero():
    exact(*both("logits_by_batch", [0.5, -0.25, 2.0, 1.0], [[1.0, -1.0]] * 4, [7], "split_k"))


def _row(rng, k, v):
    x = [float(np.float32(rng.gauss(0, 1) * rng.choice([1, 1, 30]))) for _ in range(k)]
    w = [[float(np.float32(rng.gauss(0, 0.2))) for _ in range(v)] for _ in range(k)]
    return x, w


_rng = random.Random(157)
RANDOM = [(*_row(_rng, 4 * _rng.randint(1, 32), _rng.randint(1, 6)), [_rng.choice([1, 3, 4, 5, 16, 32, 33, 128])
           for _ in range(_rng.randint(1, 4))]) for _ in range(20)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    x, w, sizes = RANDOM[index]
    exact(*both("logits_by_batch", x, w, sizes, "split_k"))
    got, expected = both("logits_by_batch", x, w, sizes, "invariant")
    if expected["max_abs_diff"] != 0.0:
        raise RuntimeError("the reference's invariant policy differs across batch sizes")
    exact(got, expected)
    total = np.float32(0)
    for v in x:
        total = np.float32(total + np.float32(v))
    if reference.reduce_f32(x, 1) != float(total):
        raise RuntimeError("the reference's one-chunk sum is not a sequential float32 sum")
    exact(*both("reduce_f32", x, 4))


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("splits", "reduce_f32", ([1.0, 2.0, 3.0], 2)),
    ("splits", "reduce_f32", ([1.0], 2)),
    ("x", "logits_by_batch", ([1.0] * 6, [[1.0]] * 6, [1], "split_k")),
    ("w", "logits_by_batch", ([1.0] * 4, [[1.0]] * 3, [1], "split_k")),
    ("w", "logits_by_batch", ([1.0] * 4, [[1.0], 3, [1.0], [1.0]], [1], "split_k")),
    ("w", "logits_by_batch", ([1.0] * 4, [[1.0], [1.0], [1.0], [1.0, 2.0]], [1], "split_k")),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
