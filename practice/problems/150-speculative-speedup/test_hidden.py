"""Hidden cases for 150: edge acceptance rates, free drafts, invalid inputs, random vs reference.

Floats are compared with rtol=1e-9; integers exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def test_expected_tokens_k0():
    got, expected = both("expected_tokens", 0.7, 0)
    check_close(got, expected, rtol=RTOL)


def test_expected_tokens_alpha_one():
    got, expected = both("expected_tokens", 1.0, 5)
    check_close(got, expected, rtol=RTOL)


def test_expected_tokens_alpha_zero():
    got, expected = both("expected_tokens", 0.0, 4)
    check_close(got, expected, rtol=RTOL)


def test_expected_tokens_near_one():
    got, expected = both("expected_tokens", 0.999999, 7)
    check_close(got, expected, rtol=RTOL)


def test_speedup_basic():
    got, expected = both("speedup", 0.6, 3, 0.1)
    check_close(got, expected, rtol=RTOL)


def test_speedup_can_be_below_one():
    got, expected = both("speedup", 0.1, 4, 0.5)
    check_close(got, expected, rtol=RTOL)


def test_best_free_draft_is_k_max():
    got, expected = both("best_draft_len", 0.5, 0.0, k_max=10)
    check_close(got, expected, rtol=RTOL)


def test_best_all_rejected_is_one():
    got, expected = both("best_draft_len", 0.0, 0.2)
    check_close(got, expected, rtol=RTOL)


def test_best_perfect_drafts():
    got, expected = both("best_draft_len", 1.0, 0.02, k_max=32)
    check_close(got, expected, rtol=RTOL)


def test_best_default_k_max():
    got, expected = both("best_draft_len", 0.5, 0.0)
    check_close(got, expected, rtol=RTOL)


def test_best_tie_takes_smallest_k():
    got, expected = both("best_draft_len", 0.0, 0.0, k_max=6)
    check_close(got, expected, rtol=RTOL)


def test_best_k_max_one():
    got, expected = both("best_draft_len", 0.9, 0.01, k_max=1)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("alpha", "expected_tokens", (1.2, 3), {}),
    ("alpha", "expected_tokens", (-0.1, 3), {}),
    ("k", "expected_tokens", (0.5, -1), {}),
    ("k", "speedup", (0.5, 0, 0.1), {}),
    ("c", "speedup", (0.5, 2, -0.1), {}),
    ("c", "speedup", (0.5, 2, float("inf")), {}),
    ("k_max", "best_draft_len", (0.5, 0.1), {"k_max": 0}),
    ("alpha", "best_draft_len", (float("nan"), 0.1), {}),
    ("c", "best_draft_len", (0.5, float("nan")), {}),
    ("k", "speedup", (0.5, 1.0, 0.1), {}),
    ("k_max", "best_draft_len", (0.5, 0.1), {"k_max": True}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _cases(n, seed=150):
    rng = random.Random(seed)
    return [(rng.uniform(0.0, 0.98), rng.uniform(0.005, 0.4), rng.randint(1, 24)) for _ in range(n)]


RANDOM = _cases(15)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    alpha, c, k_max = RANDOM[index]
    got, expected = both("best_draft_len", alpha, c, k_max=k_max)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("speedup", alpha, k_max, c)
    check_close(got, expected, rtol=RTOL)
