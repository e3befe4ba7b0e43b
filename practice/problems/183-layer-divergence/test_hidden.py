"""Hidden cases for 183: identical dumps, zero vectors on either side, scaled outputs (cosine 1, error
not 0), an error exactly at the tolerance (not a divergence), no divergence; bisection for every first
bad layer of small models, none bad, one layer, against a linear scan; random dumps vs the reference.
Layers and probes exactly, floats with rtol=1e-9, atol=1e-12."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL, ATOL = 1e-9, 1e-12


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def close(got, expected):
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_identical_dumps():
    ref = [[1.0, -2.0, 3.0], [0.5, 0.5, 0.5]]
    close(*both("layer_errors", ref, [list(r) for r in ref]))
    close(*both("first_divergence", ref, [list(r) for r in ref], 1e-6))


def test_zero_vectors():
    close(*both("layer_errors", [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]))


def test_scaled_output_keeps_cosine():
    close(*both("layer_errors", [[1.0, 2.0, 2.0]], [[2.0, 4.0, 4.0]]))


def test_negative_cosine():
    close(*both("layer_errors", [[1.0, 0.0]], [[-1.0, 0.0]]))


def test_error_exactly_at_tol_is_not_a_divergence():
    # ||[0, 0.5]|| / ||[0, 4]|| = 0.125 exactly
    ref, test = [[0.0, 4.0], [0.0, 4.0]], [[0.0, 4.5], [0.0, 5.0]]
    close(*both("first_divergence", ref, test, 0.125))
    close(*both("first_divergence", ref, test, 0.124))


def test_no_divergence_reports_the_largest_error():
    close(*both("first_divergence", [[1.0], [2.0], [4.0]], [[1.001], [2.01], [4.001]], 0.5))


def test_bisect_every_first_bad_layer():
    for n in (1, 2, 3, 7, 8, 61):
        for bad in range(-1, n):
            check_close(*both("bisect_plan", n, bad))


def test_bisect_finds_the_linear_answer():
    for n, bad in ((80, 0), (80, 79), (126, 63), (1000, 777)):
        got, expected = both("bisect_plan", n, bad)
        if expected["layer"] != bad:
            raise RuntimeError("the reference's bisection misses the first bad layer")
        check_close(got, expected)


def _dumps(rng):
    layers, dim = rng.randint(1, 12), rng.randint(1, 8)
    ref = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(layers)]
    start = rng.randint(0, layers)
    test = [[x + rng.gauss(0, 1e-4 if i < start else 0.3) for x in row] for i, row in enumerate(ref)]
    return ref, test


_rng = random.Random(183)
RANDOM = [_dumps(_rng) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    ref, test = RANDOM[index]
    close(*both("layer_errors", ref, test))
    close(*both("first_divergence", ref, test, 0.01))


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("test", "layer_errors", ([[1.0], [2.0]], [[1.0]])),
    ("test", "layer_errors", ([[1.0, 2.0]], [[1.0]])),
    ("test", "first_divergence", ([[1.0]], [[1.0], [2.0]], 0.1)),
    ("first_bad", "bisect_plan", (4, 4)),
    ("first_bad", "bisect_plan", (1, 3)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
