"""Hidden cases for 138: one rank, one expert per rank, a token's experts all on one rank (one copy),
tokens on every rank, ranks that receive nothing, the receive order (source, token, slot), expert
loads, DeepSeek-V3-sized routing; combine with missing tokens, repeated slots, zero weights, any order,
and dispatch + combine together against a dense MoE computation. Integers exactly, floats with
rtol=1e-9, atol=1e-12."""
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


# --- dispatch ---------------------------------------------------------------------------------

def test_one_expert_in_all():
    check_close(*both("dispatch", [[0], [0]], [0, 0], 1, 1))


def test_one_rank_keeps_everything():
    check_close(*both("dispatch", [[0, 1], [1, 0]], [0, 0], 2, 1))


def test_one_expert_per_rank():
    check_close(*both("dispatch", [[0, 3], [2, 1], [3, 2]], [0, 1, 2], 4, 4))


def test_all_experts_on_one_rank_send_one_copy():
    check_close(*both("dispatch", [[4, 5, 6, 7], [0, 1, 2, 3]], [0, 1], 8, 2))


def test_token_sends_to_its_own_rank_too():
    check_close(*both("dispatch", [[0, 5], [4, 1]], [0, 1], 8, 2))


def test_receive_order_source_then_token_then_slot():
    # tokens interleaved over ranks; rank 1's tokens come after rank 0's even with lower ids
    check_close(*both("dispatch", [[3, 2], [2, 3], [3, 0], [1, 2]], [1, 0, 1, 0], 4, 2))


def test_slot_order_within_a_token():
    check_close(*both("dispatch", [[7, 6, 5]], [0], 8, 2))


def test_top1_routing():
    check_close(*both("dispatch", [[5], [5], [0], [2]], [0, 1, 2, 3], 8, 4))


def test_last_expert_on_last_rank():
    check_close(*both("dispatch", [[15, 0], [14, 8]], [3, 2], 16, 4))


def test_deepseek_v3_sized_routing():
    rng = random.Random(3)
    ids = [rng.sample(range(256), 8) for _ in range(64)]
    ranks = [rng.randrange(32) for _ in range(64)]
    check_close(*both("dispatch", ids, ranks, 256, 32))


# --- combine ----------------------------------------------------------------------------------

def test_combine_weighted_sum():
    received = [{"token": 0, "slot": 0, "out": [1.0, 2.0]}, {"token": 0, "slot": 1, "out": [10.0, -4.0]}]
    check_close(*both("combine", received, [[0.75, 0.25]]), rtol=RTOL, atol=ATOL)


def test_combine_missing_token_is_zero():
    received = [{"token": 2, "slot": 1, "out": [1.0, 1.0, 1.0]}]
    check_close(*both("combine", received, [[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]]), rtol=RTOL, atol=ATOL)


def test_combine_uses_the_slots_weight():
    received = [{"token": 0, "slot": 1, "out": [2.0]}, {"token": 1, "slot": 0, "out": [2.0]}]
    check_close(*both("combine", received, [[0.9, 0.1], [0.3, 0.7]]), rtol=RTOL, atol=ATOL)


def test_combine_zero_and_negative_weights():
    received = [{"token": 0, "slot": 0, "out": [5.0]}, {"token": 0, "slot": 1, "out": [3.0]}]
    check_close(*both("combine", received, [[0.0, -1.5]]), rtol=RTOL, atol=ATOL)


def test_combine_repeated_item_counts_twice():
    item = {"token": 0, "slot": 0, "out": [1.0, -1.0]}
    check_close(*both("combine", [item, dict(item)], [[0.5]]), rtol=RTOL, atol=ATOL)


def test_combine_order_does_not_matter():
    rng = random.Random(4)
    items = [{"token": t, "slot": s, "out": [rng.gauss(0, 1) for _ in range(4)]} for t in range(5) for s in range(3)]
    weights = [[rng.random() for _ in range(3)] for _ in range(5)]
    got = call(submission, "combine")(items[::-1], weights)
    check_close(got, reference.combine(items, weights), rtol=1e-9, atol=1e-12)


def _moe_case(rng):
    experts, ep = rng.choice([(4, 2), (8, 4), (16, 4), (8, 8), (6, 3)])
    tokens, k, d = rng.randint(1, 12), rng.randint(1, min(4, experts)), rng.randint(1, 5)
    ids = [rng.sample(range(experts), k) for _ in range(tokens)]
    ranks = [rng.randrange(ep) for _ in range(tokens)]
    x = [[rng.gauss(0, 1) for _ in range(d)] for _ in range(tokens)]
    w = [[[rng.gauss(0, 1) for _ in range(d)] for _ in range(d)] for _ in range(experts)]
    gates = []
    for _ in range(tokens):
        g = [rng.random() + 0.01 for _ in range(k)]
        gates.append([v / sum(g) for v in g])
    return ids, ranks, experts, ep, x, w, gates


_rng = random.Random(138)
RANDOM = [_moe_case(_rng) for _ in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random_moe_layer(index):
    """dispatch, run each expert on what its rank received, combine; equal to the dense layer."""
    ids, ranks, experts, ep, x, w, gates = RANDOM[index]
    check_close(*both("dispatch", ids, ranks, experts, ep))
    plan = reference.dispatch(ids, ranks, experts, ep)
    received = []
    for dst in range(ep):
        for t, slot in plan["recv"][dst]:
            received.append({"token": t, "slot": slot,
                             "out": (np.array(x[t]) @ np.array(w[ids[t][slot]])).tolist()})
    dense = [sum(g * (np.array(x[t]) @ np.array(w[e])) for e, g in zip(ids[t], gates[t])).tolist()
             for t in range(len(x))]
    expected = reference.combine(received, gates)
    if not np.allclose(expected, dense, rtol=1e-10, atol=1e-12):
        raise RuntimeError("the reference's dispatch + combine differs from the dense MoE layer")
    check_close(call(submission, "combine")(received, gates), expected, rtol=RTOL, atol=ATOL)


# Cross-item and cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("topk_ids", "dispatch", ([[1, 1]], [0], 4, 2)),
    ("topk_ids", "dispatch", ([[1, 2], [3]], [0, 0], 4, 2)),
    ("topk_ids", "dispatch", ([[4]], [0], 4, 2)),
    ("token_rank", "dispatch", ([[1]], [2], 4, 2)),
    ("token_rank", "dispatch", ([[1], [2]], [0], 4, 2)),
    ("token_rank", "dispatch", ([[1]], [0, 1], 4, 2)),
    ("ep_size", "dispatch", ([[1]], [0], 6, 4)),
    ("ep_size", "dispatch", ([[1]], [0], 2, 4)),
    ("received", "combine", ([{"token": 1, "slot": 0, "out": [1.0]}], [[1.0]])),
    ("received", "combine", ([{"token": 0, "slot": 1, "out": [1.0]}], [[1.0]])),
    ("received", "combine", ([{"token": 0, "slot": 0, "out": [1.0]}, {"token": 0, "slot": 0, "out": [1.0, 2.0]}],
                             [[1.0]])),
    ("topk_weights", "combine", ([{"token": 0, "slot": 0, "out": [1.0]}], [[1.0], [1.0, 2.0]])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
