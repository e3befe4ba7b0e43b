"""Hidden cases for 136: the TP MLP at tp = 1, tp = I and in between, its sum equal to the dense MLP,
large negative gates (silu without overflow); embeddings with V divisible or not by tp, empty shards,
ids at shard edges, repeated ids; the parallel argmax with ties inside a shard and across shards,
empty shards, and against a dense argmax; random cases vs the reference. Ids exactly, floats with
rtol=1e-9, atol=1e-12."""
import math
import random

import numpy as np
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


def rand(rng, rows, cols, scale=1.0):
    return [[rng.gauss(0, scale) for _ in range(cols)] for _ in range(rows)]


def dense_mlp(x, g, u, d):
    a = np.array(x)
    z = a @ np.array(g)
    with np.errstate(over="ignore"):
        return ((z / (1 + np.exp(-z))) * (a @ np.array(u))) @ np.array(d)


def mlp_case(seed, t, dim, inter, out, scale=1.0):
    rng = random.Random(seed)
    return rand(rng, t, dim, scale), rand(rng, dim, inter), rand(rng, dim, inter), rand(rng, inter, out)


def check_mlp(args, tp):
    got, expected = both("tp_mlp", *args, tp)
    if not np.allclose(expected["y"], dense_mlp(*args), rtol=1e-10, atol=1e-12):
        raise RuntimeError("the reference's TP MLP differs from the dense one")
    close(got, expected)


def test_mlp_tp_one_is_dense():
    check_mlp(mlp_case(1, 2, 3, 4, 2), 1)


def test_mlp_one_feature_per_rank():
    check_mlp(mlp_case(2, 3, 4, 4, 3), 4)


def test_mlp_tp_between():
    check_mlp(mlp_case(3, 5, 8, 12, 8), 3)
    check_mlp(mlp_case(4, 1, 8, 16, 8), 8)


def test_mlp_large_negative_gate_does_not_overflow():
    x = [[1.0]]
    check_mlp((x, [[-800.0, 3.0]], [[1.0, 1.0]], [[1.0], [1.0]]), 2)


def test_mlp_gate_and_up_are_cut_alike():
    # gate and up differ per column: cutting them differently would change the partials
    x = [[1.0, 2.0]]
    g = [[1.0, -1.0, 0.5, 2.0], [0.0, 1.0, -1.0, 0.5]]
    u = [[3.0, 0.0, 1.0, -2.0], [1.0, 1.0, 0.0, 1.0]]
    d = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]]
    check_mlp((x, g, u, d), 2)


# --- vocab_embedding --------------------------------------------------------------------------

TABLE = [[float(i), float(-i), 0.5 * i] for i in range(10)]


def test_embedding_tp_one():
    close(*both("vocab_embedding", [3, 9, 0], TABLE, 1))


def test_embedding_vocab_divisible():
    close(*both("vocab_embedding", [0, 4, 5, 9], TABLE, 2))


def test_embedding_vocab_not_divisible():
    close(*both("vocab_embedding", [0, 3, 4, 7, 8, 9], TABLE, 3))


def test_embedding_empty_last_shards():
    # V = 10, tp = 4: s = 3, rank 3 holds only row 9; tp = 6: s = 2, rank 5 holds nothing
    close(*both("vocab_embedding", [9, 8, 1], TABLE, 4))
    close(*both("vocab_embedding", [9, 8, 1], TABLE, 6))


def test_embedding_more_ranks_than_rows():
    close(*both("vocab_embedding", [0, 1], TABLE[:2], 4))


def test_embedding_repeated_ids():
    close(*both("vocab_embedding", [5, 5, 5], TABLE, 5))


def test_embedding_shard_edges():
    close(*both("vocab_embedding", [2, 3, 5, 6], TABLE, 4))


# --- parallel_argmax --------------------------------------------------------------------------

def check_argmax(hidden, head, tp):
    got, expected = both("parallel_argmax", hidden, head, tp)
    logits = np.array(hidden) @ np.array(head)
    if expected["tokens"] != [int(np.argmax(r)) for r in logits]:
        raise RuntimeError("the reference's parallel argmax differs from the dense one")
    close(got, expected)


def test_argmax_tp_one():
    check_argmax([[1.0, 0.0], [0.0, 1.0]], [[1.0, 3.0, -1.0], [2.0, 0.0, 5.0]], 1)


def test_argmax_tie_across_shards_takes_the_lower_id():
    check_argmax([[1.0, 0.0]], [[1.0, 3.0, -1.0, 3.0, 0.0], [2.0, 0.0, 5.0, 1.0, 0.5]], 2)
    check_argmax([[1.0, 0.0]], [[1.0, 3.0, -1.0, 3.0, 0.0], [2.0, 0.0, 5.0, 1.0, 0.5]], 3)


def test_argmax_tie_inside_a_shard():
    check_argmax([[1.0]], [[2.0, 7.0, 7.0, 1.0]], 1)
    check_argmax([[1.0]], [[2.0, 7.0, 7.0, 7.0]], 2)


def test_argmax_later_shard_strictly_larger():
    check_argmax([[1.0]], [[2.0, 7.0, 7.5, 1.0]], 2)


def test_argmax_empty_shards_report_none():
    check_argmax([[1.0], [-1.0]], [[0.5, -0.5, 2.0]], 4)
    check_argmax([[1.0]], [[0.5, -0.5, 2.0, 1.0, 0.0]], 4)


def test_argmax_all_negative_logits():
    check_argmax([[-1.0]], [[3.0, 5.0, 4.0, 9.0]], 2)


_rng = random.Random(136)
RANDOM = []
for i in range(12):
    t, dim, out = _rng.randint(1, 4), _rng.randint(1, 6), _rng.randint(1, 5)
    tp = _rng.choice([1, 2, 3, 4, 8])
    inter = tp * _rng.randint(1, 3)
    vocab = _rng.randint(1, 40)
    RANDOM.append((mlp_case(5000 + i, t, dim, inter, out, _rng.choice([0.5, 2.0])), tp,
                   [_rng.randrange(vocab) for _ in range(_rng.randint(1, 8))], rand(_rng, vocab, dim),
                   rand(_rng, t, dim), rand(_rng, dim, vocab)))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    args, tp, ids, table, hidden, head = RANDOM[index]
    check_mlp(args, tp)
    close(*both("vocab_embedding", ids, table, tp))
    check_argmax(hidden, head, tp)


X, G, U, D = mlp_case(9, 1, 2, 4, 1)

# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("x", "tp_mlp", ([[1.0, 2.0], [1.0]], G, U, D, 1)),
    ("w_gate", "tp_mlp", (X, G[:1], U, D, 1)),
    ("w_up", "tp_mlp", (X, G, [r[:3] for r in U], D, 1)),
    ("w_up", "tp_mlp", (X, G, U + U, D, 1)),
    ("w_down", "tp_mlp", (X, G, U, D[:3], 1)),
    ("tp", "tp_mlp", (X, G, U, D, 3)),
    ("tp", "tp_mlp", (X, G, U, D, 8)),
    ("ids", "vocab_embedding", ([10], TABLE, 2)),
    ("ids", "vocab_embedding", ([0, 2], TABLE[:2], 2)),
    ("table", "vocab_embedding", ([0], [[1.0], [1.0, 2.0]], 1)),
    ("lm_head", "parallel_argmax", ([[1.0, 2.0]], [[1.0, 2.0]], 1)),
    ("hidden", "parallel_argmax", ([[1.0], [1.0, 2.0]], [[1.0]], 1)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
