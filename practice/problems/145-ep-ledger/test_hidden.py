"""Hidden cases for 145: hit probabilities at the extremes (one group, one expert per group, topk
filling the complement, topk = all experts), against a Monte-Carlo-free exact count on small cases,
the ledger on one GPU, one node, one GPU per node, DeepSeek-V3-sized deployments, random cases vs the
reference. Floats with rtol=1e-9."""
import itertools
import math
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_one_group_is_always_hit():
    check_close(*both("group_hit_prob", 16, 2, 1), rtol=RTOL)


def test_one_expert_per_group_top1():
    check_close(*both("group_hit_prob", 8, 1, 8), rtol=RTOL)


def test_topk_larger_than_the_complement_is_certain():
    # 8 experts in 2 groups of 4: choosing 5 must touch both groups
    check_close(*both("group_hit_prob", 8, 5, 2), rtol=RTOL)
    check_close(*both("group_hit_prob", 8, 4, 2), rtol=RTOL)


def test_topk_equal_to_all_experts():
    check_close(*both("group_hit_prob", 6, 6, 3), rtol=RTOL)


def test_deepseek_shapes():
    for groups in (8, 32, 64, 128, 256):
        check_close(*both("group_hit_prob", 256, 8, groups), rtol=RTOL)


def test_exact_count_on_small_cases():
    for experts, k, groups in ((6, 2, 3), (8, 3, 4), (9, 4, 3)):
        size = experts // groups
        hits = sum(1 for c in itertools.combinations(range(experts), k) if any(e < size for e in c))
        exact = hits / math.comb(experts, k)
        got, expected = both("group_hit_prob", experts, k, groups)
        if abs(expected - exact) > 1e-12:
            raise RuntimeError("the reference's probability differs from the exact count")
        check_close(got, expected, rtol=RTOL)


def test_ledger_one_gpu_sends_nothing():
    check_close(*both("ep_ledger", 64, 8, 2, 1, 1, 4096, 32, 1, 2, 450, 50), rtol=RTOL, atol=1e-300)


def test_ledger_one_node_uses_only_nvlink():
    check_close(*both("ep_ledger", 64, 64, 6, 8, 8, 2048, 27, 1, 2, 450, 50), rtol=RTOL, atol=1e-300)


def test_ledger_one_gpu_per_node_uses_only_rdma():
    check_close(*both("ep_ledger", 64, 64, 6, 8, 1, 2048, 27, 1, 2, 450, 50), rtol=RTOL, atol=1e-300)


def test_ledger_deepseek_v3_decode_sizes():
    for gpus in (32, 64, 128, 256):
        check_close(*both("ep_ledger", 96, 256, 8, gpus, 8, 7168, 58, 1, 2, 160, 50), rtol=RTOL)


def test_ledger_bf16_both_ways_and_fractional_bytes():
    check_close(*both("ep_ledger", 1, 256, 8, 32, 8, 7168, 58, 2, 2, 160, 50), rtol=RTOL)
    check_close(*both("ep_ledger", 7, 160, 6, 16, 4, 5120, 59, 1.0625, 2.5, 900, 25.0), rtol=RTOL)


def _case(rng):
    per_gpu = rng.choice([1, 2, 4, 8])
    gpus_per_node = rng.choice([1, 2, 4, 8])
    nodes = rng.randint(1, 8)
    gpus = gpus_per_node * nodes
    experts = gpus * per_gpu
    return (rng.randint(1, 512), experts, rng.randint(1, min(8, experts)), gpus, gpus_per_node,
            rng.choice([2048, 4096, 7168]), rng.randint(1, 60), rng.choice([1, 2]), rng.choice([1, 2]),
            rng.choice([160.0, 450.0, 900.0]), rng.choice([25.0, 50.0, 100.0]))


_rng = random.Random(145)
RANDOM = [_case(_rng) for _ in range(20)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    args = RANDOM[index]
    check_close(*both("ep_ledger", *args), rtol=RTOL, atol=1e-300)
    check_close(*both("group_hit_prob", args[1], args[2], args[3]), rtol=RTOL)


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("topk", "group_hit_prob", (8, 9, 2)),
    ("groups", "group_hit_prob", (8, 2, 3)),
    ("groups", "group_hit_prob", (8, 2, 16)),
    ("topk", "ep_ledger", (1, 8, 9, 2, 1, 1, 1, 1, 1, 1, 1)),
    ("gpus", "ep_ledger", (1, 8, 2, 3, 1, 1, 1, 1, 1, 1, 1)),
    ("gpus_per_node", "ep_ledger", (1, 8, 2, 4, 3, 1, 1, 1, 1, 1, 1)),
    ("gpus_per_node", "ep_ledger", (1, 8, 2, 4, 8, 1, 1, 1, 1, 1, 1)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
