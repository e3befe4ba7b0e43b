"""Hidden cases for 176: a gang that fits exactly, one GPU short (rolled back), later jobs using what a
failed gang left, bin-pack ties, pods sharing a node; pod-by-pod stranding, later pods of a failed job
still placed, jobs blocked by stranded GPUs, nothing stranded when all fit; fragmentation at 0 free,
size above every node, exact multiples; random cases vs the reference (and the reference checked:
both schedules conserve GPUs). Integers exactly, floats with rtol=1e-9."""
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


def J(name, pods, gpus):
    return {"name": name, "pods": pods, "gpus_per_pod": gpus}


def test_gang_fits_exactly():
    check_close(*both("gang_schedule", [8, 8], [J("a", 4, 4)]))


def test_gang_one_gpu_short_is_rolled_back():
    check_close(*both("gang_schedule", [8, 7], [J("a", 4, 4), J("b", 1, 7)]))


def test_gang_no_jobs():
    check_close(*both("gang_schedule", [8], []))


def test_gang_binpack_ties_and_sharing():
    check_close(*both("gang_schedule", [4, 4, 8], [J("a", 2, 2), J("b", 3, 2)]))


def test_gang_later_small_job_uses_the_space():
    check_close(*both("gang_schedule", [8, 8, 4], [J("a", 3, 4), J("b", 3, 4), J("c", 2, 2)]))


def test_gang_zero_free_nodes():
    check_close(*both("gang_schedule", [0, 0, 2], [J("a", 1, 1), J("b", 1, 2)]))


def test_pod_by_pod_all_fit_nothing_stranded():
    check_close(*both("pod_by_pod", [8, 8], [J("a", 2, 4), J("b", 2, 4)]))


def test_pod_by_pod_later_pods_still_tried():
    # the 8-GPU pod fails, the 2-GPU pods of the next job still fit
    check_close(*both("pod_by_pod", [4, 4], [J("big", 2, 4), J("huge", 1, 8), J("small", 2, 2)]))


def test_pod_by_pod_stranded_gpus_block_others():
    check_close(*both("pod_by_pod", [8, 8], [J("a", 3, 4), J("b", 2, 4)]))


def test_pod_by_pod_deadlock_shape():
    # two jobs each needing two whole nodes, interleaved by arrival: both half placed
    check_close(*both("pod_by_pod", [8, 8, 8], [J("a", 2, 8), J("b", 2, 8)]))


def test_fragmentation_examples():
    check_close(*both("fragmentation", [6, 3, 1], 4), rtol=RTOL)
    check_close(*both("fragmentation", [8, 8], 8), rtol=RTOL)


def test_fragmentation_nothing_free():
    check_close(*both("fragmentation", [0, 0], 2), rtol=RTOL)
    check_close(*both("fragmentation", [], 2), rtol=RTOL)


def test_fragmentation_size_above_every_node():
    check_close(*both("fragmentation", [7, 3], 8), rtol=RTOL)


def test_fragmentation_size_one():
    check_close(*both("fragmentation", [5, 2], 1), rtol=RTOL)


def _case(rng):
    free = [rng.choice([0, 1, 2, 4, 8]) for _ in range(rng.randint(1, 8))]
    jobs = [J(f"j{i}", rng.randint(1, 4), rng.choice([1, 2, 4, 8])) for i in range(rng.randint(0, 10))]
    return free, jobs


_rng = random.Random(176)
RANDOM = [_case(_rng) for _ in range(30)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    free, jobs = RANDOM[index]
    got, expected = both("gang_schedule", free, jobs)
    used = sum(j["pods"] * j["gpus_per_pod"] for j in jobs if expected["placed"][j["name"]] is not None)
    if sum(free) - sum(expected["free"]) != used:
        raise RuntimeError("the reference's gang schedule loses or invents GPUs")
    check_close(got, expected)
    got, expected = both("pod_by_pod", free, jobs)
    held = sum(j["gpus_per_pod"] * sum(1 for i in expected["placed"][j["name"]] if i is not None) for j in jobs)
    if sum(free) - sum(expected["free"]) != held:
        raise RuntimeError("the reference's pod-by-pod schedule loses or invents GPUs")
    check_close(got, expected)
    for size in (1, 2, 4, 8):
        check_close(*both("fragmentation", expected["free"], size), rtol=RTOL)


# Cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("jobs", "gang_schedule", ([8], [J("a", 1, 1), J("a", 1, 1)])),
    ("jobs", "pod_by_pod", ([8], [J("a", 1, 1), J("a", 2, 1)])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
