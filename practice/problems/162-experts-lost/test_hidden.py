"""Hidden cases for 162: no failures, every GPU failed, unplaced experts, two copies on one GPU, the
last replica lost, token shares at 0, all and in between; loss probabilities at 0 failures, all GPUs,
placements with every expert doubled on distinct GPUs, and random placements vs the reference (the
reference checked against a direct count). Integers exactly, floats with rtol=1e-9."""
import itertools
import math
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
P = [[0, 1, 4], [2, 3, 5], [4, 5, 0], [6, 7, 2]]


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_no_failures():
    check_close(*both("lost_experts", P, 8, []))


def test_every_gpu_failed():
    check_close(*both("lost_experts", P, 8, [3, 0, 2, 1]))


def test_replicated_expert_survives_one_failure():
    check_close(*both("lost_experts", P, 8, [0]))
    check_close(*both("lost_experts", P, 8, [2]))


def test_both_copies_lost():
    check_close(*both("lost_experts", P, 8, [0, 2]))


def test_unplaced_expert_is_lost_from_the_start():
    check_close(*both("lost_experts", [[0], [1]], 4, []))


def test_two_copies_on_one_gpu_die_together():
    check_close(*both("lost_experts", [[0, 0], [1]], 2, [0]))
    check_close(*both("lost_experts", [[0, 0], [1]], 2, []))


def test_empty_gpus():
    check_close(*both("lost_experts", [[], [0, 1], []], 2, [0, 2]))


def test_share_nothing_lost():
    check_close(*both("token_loss_share", 256, 8, 0), rtol=RTOL)


def test_share_everything_lost():
    check_close(*both("token_loss_share", 256, 8, 256), rtol=RTOL)


def test_share_certain_when_the_rest_is_too_small():
    check_close(*both("token_loss_share", 10, 4, 7), rtol=RTOL)
    check_close(*both("token_loss_share", 10, 4, 6), rtol=RTOL)


def test_share_top1_is_the_lost_fraction():
    check_close(*both("token_loss_share", 64, 1, 3), rtol=RTOL)


def test_share_deepseek_sizes():
    for lost in (1, 2, 4, 8, 16, 32):
        check_close(*both("token_loss_share", 256, 8, lost), rtol=RTOL)


def test_share_topk_equals_experts():
    check_close(*both("token_loss_share", 5, 5, 1), rtol=RTOL)


def test_probability_zero_failures():
    check_close(*both("loss_probability", P, 8, 0), rtol=RTOL)
    check_close(*both("loss_probability", [[0]], 2, 0), rtol=RTOL)


def test_probability_all_gpus_fail():
    check_close(*both("loss_probability", P, 8, 4), rtol=RTOL)


def test_probability_doubled_on_distinct_gpus_survives_one():
    doubled = [[0, 1], [2, 3], [0, 2], [1, 3]]
    check_close(*both("loss_probability", doubled, 4, 1), rtol=RTOL)
    check_close(*both("loss_probability", doubled, 4, 2), rtol=RTOL)


def test_probability_ring_placement():
    # expert e on GPUs e and e + 1 (mod 8): two failures lose an expert only if adjacent
    ring = [[g, (g - 1) % 8] for g in range(8)]
    check_close(*both("loss_probability", ring, 8, 2), rtol=RTOL)
    check_close(*both("loss_probability", ring, 8, 3), rtol=RTOL)


def _direct(gpu_experts, num_experts, failures):
    n = len(gpu_experts)
    combos = list(itertools.combinations(range(n), failures))
    bad = 0
    for failed in combos:
        alive = {e for g in range(n) if g not in failed for e in gpu_experts[g]}
        bad += len(alive) < num_experts
    return bad / len(combos)


def _placement(rng):
    gpus = rng.randint(1, 12)
    experts = rng.randint(1, 16)
    out = [[] for _ in range(gpus)]
    for e in range(experts):
        for g in rng.sample(range(gpus), rng.randint(0 if rng.random() < 0.1 else 1, min(3, gpus))):
            out[g].append(e)
    return out, experts


_rng = random.Random(162)
RANDOM = []
for _ in range(20):
    placement, experts = _placement(_rng)
    f = _rng.randint(0, len(placement))
    RANDOM.append((placement, experts, f, _rng.sample(range(len(placement)), f), _rng.randint(1, experts)))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    placement, experts, f, failed, k = RANDOM[index]
    check_close(*both("lost_experts", placement, experts, failed))
    got, expected = both("loss_probability", placement, experts, f)
    if abs(expected - _direct(placement, experts, f)) > 1e-12:
        raise RuntimeError("the reference's probability differs from a direct count")
    check_close(got, expected, rtol=RTOL)
    lost = len(reference.lost_experts(placement, experts, failed)["lost"])
    check_close(*both("token_loss_share", experts, k, lost), rtol=RTOL)


# Cross-field and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("gpu_experts", "lost_experts", ([[0, 8]], 8, [])),
    ("gpu_experts", "loss_probability", ([[2]], 2, 0)),
    ("failed", "lost_experts", (P, 8, [4])),
    ("failed", "lost_experts", (P, 8, [1, 1])),
    ("topk", "token_loss_share", (8, 9, 0)),
    ("lost", "token_loss_share", (8, 2, 9)),
    ("failures", "loss_probability", (P, 8, 5)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
