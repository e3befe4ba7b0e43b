"""Hidden cases for 181: base-only batches, every token on one adapter, several ranks and alphas, the
scale alpha / r, adapters unused by the batch, against a per-token loop and against merged weights;
segments with -1, gaps in adapter ids and a single adapter; FLOPs for empty batches and mixed ranks;
random cases vs the reference. Integers exactly, floats with rtol=1e-9, atol=1e-12."""
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


def rand(rng, rows, cols):
    return [[rng.gauss(0, 1) for _ in range(cols)] for _ in range(rows)]


def case(seed, tokens, d_in, d_out, ranks, with_base=True):
    rng = random.Random(seed)
    adapters = [{"a": rand(rng, d_in, r), "b": rand(rng, r, d_out), "alpha": rng.choice([1, 8, 16.0, 32])}
                for r in ranks]
    ids = [rng.randrange(-1 if with_base else 0, len(ranks)) for _ in range(tokens)] if ranks else [-1] * tokens
    return rand(rng, tokens, d_in), rand(rng, d_in, d_out), adapters, ids


def check_forward(args):
    x, w, adapters, ids = args
    expected = reference.lora_forward(x, w, adapters, ids)
    loop = []
    for i, k in enumerate(ids):
        row = np.array(x[i]) @ np.array(w)
        if k >= 0:
            a, b = np.array(adapters[k]["a"]), np.array(adapters[k]["b"])
            row = row + adapters[k]["alpha"] / a.shape[1] * (np.array(x[i]) @ a @ b)
        loop.append(row)
    if not np.allclose(expected, loop, rtol=1e-10, atol=1e-12):
        raise RuntimeError("the reference differs from a per-token loop")
    close(call(submission, "lora_forward")(*args), expected)


def test_base_only():
    check_forward(case(1, 4, 3, 2, []))


def test_all_tokens_one_adapter_equals_merged_weights():
    x, w, adapters, _ = case(2, 5, 4, 3, [2])
    ids = [0] * 5
    merged = np.array(w) + adapters[0]["alpha"] / 2 * np.array(adapters[0]["a"]) @ np.array(adapters[0]["b"])
    if not np.allclose(reference.lora_forward(x, w, adapters, ids), np.array(x) @ merged, rtol=1e-10, atol=1e-12):
        raise RuntimeError("the reference differs from merged weights")
    check_forward((x, w, adapters, ids))


def test_scale_uses_the_rank():
    x = [[1.0]]
    w = [[0.0]]
    adapters = [{"a": [[1.0, 1.0, 1.0, 1.0]], "b": [[1.0], [1.0], [1.0], [1.0]], "alpha": 2}]
    check_forward((x, w, adapters, [0]))


def test_mixed_ranks_and_unused_adapters():
    check_forward(case(3, 8, 6, 5, [1, 4, 8, 2]))


def test_no_tokens_use_an_adapter():
    x, w, adapters, _ = case(4, 3, 2, 2, [2, 2])
    check_forward((x, w, adapters, [-1, -1, -1]))


def test_single_token():
    check_forward(case(5, 1, 3, 3, [2], with_base=False))


def test_segments_basic():
    check_close(*both("segments", [2, 0, -1, 2, 0, 1]))


def test_segments_empty_and_single():
    check_close(*both("segments", []))
    check_close(*both("segments", [3, 3, 3]))
    check_close(*both("segments", [-1]))


def test_segments_stable_within_an_adapter():
    check_close(*both("segments", [1, 0, 1, 0, 1, 0]))


def test_segments_gaps_in_ids():
    check_close(*both("segments", [7, 2, 7, -1, 2, 40]))


def test_flops_empty_batch():
    close(*both("lora_flops", [], [16], 4096, 4096))


def test_flops_base_only():
    close(*both("lora_flops", [-1, -1], [16], 4096, 11008))


def test_flops_mixed():
    close(*both("lora_flops", [0, 1, -1, 1], [16, 64], 4096, 4096))
    close(*both("lora_flops", [2, 2, 0], [8, 16, 128], 5120, 13824))


_rng = random.Random(181)
RANDOM = []
for i in range(12):
    ranks = [_rng.choice([1, 2, 4, 8]) for _ in range(_rng.randint(0, 4))]
    RANDOM.append(case(8000 + i, _rng.randint(1, 10), _rng.randint(1, 6), _rng.randint(1, 6), ranks))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    x, w, adapters, ids = RANDOM[index]
    check_forward((x, w, adapters, ids))
    check_close(*both("segments", ids))
    ranks = [len(a["b"]) for a in adapters]
    close(*both("lora_flops", ids, ranks or [1], len(w), len(w[0])))


X, W, AD, IDS = case(9, 3, 2, 3, [1, 2])

# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("w", "lora_forward", (X, W[:1], AD, IDS)),
    ("adapters", "lora_forward", (X, W, [{"a": [[1.0]] * 3, "b": [[1.0, 1.0, 1.0]], "alpha": 1}], [0, 0, 0])),
    ("adapters", "lora_forward", (X, W, [{"a": [[1.0], [1.0]], "b": [[1.0, 1.0]], "alpha": 1}], [0, 0, 0])),
    ("adapters", "lora_forward", (X, W, [{"a": [[1.0], [1.0]], "b": [[1.0, 1.0, 1.0]] * 2, "alpha": 1}], [0, 0, 0])),
    ("adapter_ids", "lora_forward", (X, W, AD, [0, 0])),
    ("adapter_ids", "lora_forward", (X, W, AD, [0, 0, 2])),
    ("adapter_ids", "lora_flops", ([0, 2], [8, 8], 4, 4)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
