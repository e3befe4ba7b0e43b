"""Hidden cases for 172: type filters (None matches any), exact fits (free == gpus), ties to the earlier
node for both strategies, unschedulable pods that do not block later ones, spread fragmenting what
bin-pack keeps whole, still_fits per size, random clusters vs the reference. Everything exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def N(name, gpus, t="H100"):
    return {"name": name, "gpus": gpus, "gpu_type": t}


def P(name, gpus, t=None):
    return {"name": name, "gpus": gpus, "gpu_type": t}


CLUSTER = [N("n1", 8), N("n2", 8), N("n3", 4, "L40S")]
PODS = [P("p1", 2), P("p2", 4, "H100"), P("p3", 2), P("p4", 8, "H100")]


def test_binpack_keeps_a_whole_node():
    check_close(*both("schedule", CLUSTER, PODS, "binpack"))


def test_no_pods():
    check_close(*both("schedule", CLUSTER, [], "spread"))


def test_exact_fit_is_allowed():
    check_close(*both("schedule", [N("n1", 4)], [P("a", 4), P("b", 1)], "binpack"))


def test_one_gpu_short_does_not_fit():
    check_close(*both("schedule", [N("n1", 4)], [P("a", 5)], "spread"))


def test_type_must_match():
    check_close(*both("schedule", [N("n1", 8, "A100"), N("n2", 2)], [P("a", 4, "H100"), P("b", 2, "H100")], "binpack"))


def test_none_type_matches_any():
    check_close(*both("schedule", [N("n1", 2, "A100"), N("n2", 3, "L4")], [P("a", 3), P("b", 2)], "binpack"))


def test_ties_go_to_the_earlier_node():
    nodes = [N("a", 8), N("b", 8), N("c", 8)]
    check_close(*both("schedule", nodes, [P("x", 2), P("y", 2), P("z", 2)], "binpack"))
    check_close(*both("schedule", nodes, [P("x", 2), P("y", 2), P("z", 2)], "spread"))


def test_later_strictly_better_node_wins():
    nodes = [N("a", 8), N("b", 4), N("c", 6)]
    check_close(*both("schedule", nodes, [P("x", 3)], "binpack"))
    check_close(*both("schedule", [N("a", 4), N("b", 8)], [P("x", 3)], "spread"))


def test_unschedulable_pod_does_not_block_later_ones():
    check_close(*both("schedule", [N("n1", 4)], [P("big", 8), P("small", 4)], "spread"))


def test_spread_fragments_binpack_does_not():
    nodes = [N(f"n{i}", 8) for i in range(4)]
    pods = [P(f"s{i}", 2) for i in range(4)] + [P("whole", 8), P("whole2", 8)]
    check_close(*both("schedule", nodes, pods, "spread"))
    check_close(*both("schedule", nodes, pods, "binpack"))


def test_still_fits_examples():
    check_close(*both("still_fits", [4, 4, 4], [1, 2, 4, 8]))
    check_close(*both("still_fits", [0, 8, 3], [3, 8, 9]))


def test_still_fits_empty():
    check_close(*both("still_fits", [], [1, 2]))
    check_close(*both("still_fits", [5], []))


def _cluster(rng):
    types = ["H100", "A100", "L40S"]
    nodes = [N(f"n{i}", rng.choice([1, 2, 4, 8]), rng.choice(types)) for i in range(rng.randint(1, 8))]
    pods = [P(f"p{i}", rng.choice([1, 1, 2, 4, 8]), rng.choice([None, None] + types)) for i in range(rng.randint(0, 25))]
    return nodes, pods


_rng = random.Random(172)
RANDOM = [_cluster(_rng) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    nodes, pods = RANDOM[index]
    for strategy in ("binpack", "spread"):
        got, expected = both("schedule", nodes, pods, strategy)
        check_close(got, expected)
        check_close(*both("still_fits", list(expected["free"].values()), [1, 2, 4, 8]))


# Cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("nodes", "schedule", ([N("a", 1), N("a", 2)], [], "spread")),
    ("pods", "schedule", ([N("a", 1)], [P("x", 1), P("x", 1)], "spread")),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
