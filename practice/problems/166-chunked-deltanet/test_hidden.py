"""Hidden cases for 166: beta 0 (nothing written) and 1 (overwrite), a key used twice, orthogonal keys
(a plain memory), chunk 1, chunk equal to and larger than T, T not a multiple of the chunk, random
normalized keys at several sizes, the two algorithms against each other and against a plain loop;
state sizes. Floats with rtol=1e-7, atol=1e-9; bytes exactly."""
import math
import random

import numpy as np
import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL, ATOL = 1e-7, 1e-9


def close(got, expected):
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def case(seed, t, dk, dv, beta=None):
    rng = random.Random(seed)
    keys = []
    for _ in range(t):
        x = [rng.gauss(0, 1) for _ in range(dk)]
        n = math.sqrt(sum(a * a for a in x)) or 1.0
        keys.append([a / n for a in x])
    return ([[rng.gauss(0, 1) for _ in range(dk)] for _ in range(t)], keys,
            [[rng.gauss(0, 1) for _ in range(dv)] for _ in range(t)],
            [rng.random() if beta is None else beta for _ in range(t)])


def plain(q, k, v, beta):
    s = np.zeros((len(v[0]), len(k[0])))
    out = []
    for t in range(len(q)):
        kt = np.array(k[t])
        s = s + beta[t] * np.outer(np.array(v[t]) - s @ kt, kt)
        out.append(s @ np.array(q[t]))
    return np.array(out), s


def check_all(args, chunks):
    expected = reference.delta_recurrent(*args)
    out, s = plain(*args)
    if not (np.allclose(expected["out"], out, rtol=1e-12, atol=1e-12) and np.allclose(expected["state"], s)):
        raise RuntimeError("the reference's recurrence differs from a plain loop")
    close(call(submission, "delta_recurrent")(*args), expected)
    for c in chunks:
        ref = reference.delta_chunked(*args, c)
        if not np.allclose(ref["out"], expected["out"], rtol=1e-9, atol=1e-10):
            raise RuntimeError("the reference's chunked form differs from its recurrence")
        close(call(submission, "delta_chunked")(*args, c), ref)


def test_beta_zero_writes_nothing():
    check_all(case(1, 5, 3, 2, beta=0.0), [1, 2, 5])


def test_beta_one_overwrites():
    check_all(case(2, 6, 3, 2, beta=1.0), [1, 4, 6])


def test_same_key_twice():
    q = [[1.0, 0.0], [1.0, 0.0]]
    k = [[1.0, 0.0], [1.0, 0.0]]
    check_all((q, k, [[4.0], [1.0]], [0.5, 0.5]), [1, 2])


def test_orthogonal_keys_are_a_plain_memory():
    q = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    k = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    check_all((q, k, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], [1.0, 1.0, 1.0, 0.25]), [1, 2, 3, 4])


def test_single_token():
    check_all(case(3, 1, 4, 4), [1, 8])


def test_chunk_does_not_divide_t():
    check_all(case(4, 13, 4, 3), [2, 3, 5, 12, 13, 64])


def test_unnormalized_keys():
    rng = random.Random(5)
    args = ([[rng.gauss(0, 1) for _ in range(3)] for _ in range(9)],
            [[rng.gauss(0, 0.5) for _ in range(3)] for _ in range(9)],
            [[rng.gauss(0, 1)] for _ in range(9)], [rng.random() for _ in range(9)])
    check_all(args, [1, 3, 4, 9])


_rng = random.Random(166)
RANDOM = [(case(2000 + i, _rng.randint(1, 40), _rng.randint(1, 8), _rng.randint(1, 6)), _rng.randint(1, 16))
          for i in range(12)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    args, chunk = RANDOM[index]
    check_all(args, [chunk])


def test_state_sizes():
    close(*both("state_vs_kv", 16, 128, 128, 48, 2, 65536))
    close(*both("state_vs_kv", 1, 1, 1, 1, 1, 1))
    close(*both("state_vs_kv", 32, 128, 256, 36, 4, 1024.5))


Q, K, V, B = case(9, 3, 2, 2)

# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("q", "delta_recurrent", ([[1.0, 2.0], [1.0]], K, V, B)),
    ("k", "delta_recurrent", (Q, K[:2], V, B)),
    ("k", "delta_chunked", (Q, [r + [0.0] for r in K], V, B, 2)),
    ("v", "delta_recurrent", (Q, K, V[:2], B)),
    ("v", "delta_chunked", (Q, K, [[1.0], [1.0, 2.0], [1.0]], B, 2)),
    ("beta", "delta_recurrent", (Q, K, V, B[:2])),
    ("beta", "delta_chunked", (Q, K, V, B + [0.5], 2)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
