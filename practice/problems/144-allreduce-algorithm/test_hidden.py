"""Hidden cases for 144: each algorithm's time, the choice per topology across message sizes,
exact ties (order one_shot, two_shot, ring, nvls), the one-shot/two-shot crossover (and None at two
GPUs), bus bandwidth, invalid inputs and random inputs vs the reference.
Floats: rtol=1e-9; strings and None exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error

RTOL = 1e-9
ALGOS = ["one_shot", "two_shot", "ring", "nvls"]


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


@pytest.mark.parametrize("algorithm,gpus", [(a, n) for a in ALGOS for n in (2, 3, 8)],
                         ids=[f"{a}_{n}gpus" for a in ALGOS for n in (2, 3, 8)])
def test_time_each_algorithm(algorithm, gpus):
    got, expected = both("allreduce_time_us", algorithm, 3 * 2**20, gpus, alpha_us=2.5, link_gbs=450)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_time_empty_message_is_latency_only(algorithm):
    got, expected = both("allreduce_time_us", algorithm, 0, 8, alpha_us=3.0, link_gbs=450)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_time_zero_alpha(algorithm):
    got, expected = both("allreduce_time_us", algorithm, 10**6, 4, alpha_us=0, link_gbs=100)
    check_close(got, expected, rtol=RTOL)


CHOICES = [(topology, size) for topology in ("ring", "switch", "nvls")
           for size in (8192, 1048576, 64 * 2**20)]


@pytest.mark.parametrize("topology,size", CHOICES, ids=[f"{t}_{s}B" for t, s in CHOICES])
def test_choose_by_topology_and_size(topology, size):
    got, expected = both("choose_allreduce", size, 8, alpha_us=2.0, link_gbs=450, topology=topology)
    check_close(got, expected, rtol=RTOL)


def test_choose_small_message_one_shot():
    got, expected = both("choose_allreduce", 16384, 8, alpha_us=2.0, link_gbs=450, topology="nvls")
    check_close(got, expected, rtol=RTOL)


def test_choose_tie_one_shot_two_shot():
    # 4 GPUs, once = 2 us, alpha = 3 us: one-shot 3 + 6 = 9, two-shot 6 + 3 = 9
    assert reference.allreduce_time_us("one_shot", 2000, 4, alpha_us=3.0, link_gbs=1) == \
        reference.allreduce_time_us("two_shot", 2000, 4, alpha_us=3.0, link_gbs=1)
    got, expected = both("choose_allreduce", 2000, 4, alpha_us=3.0, link_gbs=1, topology="switch")
    check_close(got, expected, rtol=RTOL)


def test_choose_tie_everything_at_two_gpus_zero_alpha():
    got, expected = both("choose_allreduce", 4096, 2, alpha_us=0.0, link_gbs=50, topology="nvls")
    check_close(got, expected, rtol=RTOL)


def test_choose_tie_two_shot_ring_nvls_with_one_shot_ahead():
    got, expected = both("choose_allreduce", 4096, 2, alpha_us=1.0, link_gbs=50, topology="nvls")
    check_close(got, expected, rtol=RTOL)


def test_choose_zero_message_zero_alpha():
    got, expected = both("choose_allreduce", 0, 8, alpha_us=0.0, link_gbs=450, topology="nvls")
    check_close(got, expected, rtol=RTOL, atol=1e-15)


def test_choose_ring_topology_at_two_gpus():
    got, expected = both("choose_allreduce", 4096, 2, alpha_us=1.0, link_gbs=32, topology="ring")
    check_close(got, expected, rtol=RTOL)


def test_crossover_two_gpus_is_none():
    got, expected = both("crossover_bytes", 2, alpha_us=2.0, link_gbs=450)
    if got is not None:
        raise Mismatch("exact", path="result")
    assert expected is None


@pytest.mark.parametrize("gpus", [3, 4, 8, 16])
def test_crossover(gpus):
    got, expected = both("crossover_bytes", gpus, alpha_us=2.0, link_gbs=450)
    check_close(got, expected, rtol=RTOL)


def test_crossover_zero_alpha():
    got, expected = both("crossover_bytes", 8, alpha_us=0, link_gbs=450)
    check_close(got, expected, rtol=RTOL, atol=1e-12)


def test_crossover_really_is_where_they_meet():
    s = reference.crossover_bytes(6, alpha_us=4.0, link_gbs=200)
    got = call(submission, "crossover_bytes")(6, alpha_us=4.0, link_gbs=200)
    check_close(got, s, rtol=RTOL)
    for algorithm in ("one_shot", "two_shot"):
        got, expected = both("allreduce_time_us", algorithm, s, 6, alpha_us=4.0, link_gbs=200)
        check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_bus_bandwidth(gpus):
    size = 256 * 2**20
    got, expected = both("bus_bandwidth_gbs", size, 4.37 + size / 144.3e3, gpus)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("algorithm", "allreduce_time_us", ("tree", 1000, 8), dict(alpha_us=1, link_gbs=1)),
    ("algorithm", "allreduce_time_us", ("Ring", 1000, 8), dict(alpha_us=1, link_gbs=1)),
    ("algorithm", "allreduce_time_us", (None, 1000, 8), dict(alpha_us=1, link_gbs=1)),
    ("message_bytes", "allreduce_time_us", ("ring", -1, 8), dict(alpha_us=1, link_gbs=1)),
    ("message_bytes", "allreduce_time_us", ("ring", float("inf"), 8), dict(alpha_us=1, link_gbs=1)),
    ("gpus", "allreduce_time_us", ("ring", 1000, 1), dict(alpha_us=1, link_gbs=1)),
    ("gpus", "allreduce_time_us", ("ring", 1000, 8.0), dict(alpha_us=1, link_gbs=1)),
    ("gpus", "allreduce_time_us", ("ring", 1000, True), dict(alpha_us=1, link_gbs=1)),
    ("alpha_us", "allreduce_time_us", ("ring", 1000, 8), dict(alpha_us=-1, link_gbs=1)),
    ("alpha_us", "allreduce_time_us", ("ring", 1000, 8), dict(alpha_us=float("nan"), link_gbs=1)),
    ("link_gbs", "allreduce_time_us", ("ring", 1000, 8), dict(alpha_us=1, link_gbs=0)),
    ("link_gbs", "allreduce_time_us", ("ring", 1000, 8), dict(alpha_us=1, link_gbs=float("inf"))),
    ("topology", "choose_allreduce", (1000, 8), dict(alpha_us=1, link_gbs=1, topology="mesh")),
    ("topology", "choose_allreduce", (1000, 8), dict(alpha_us=1, link_gbs=1, topology=None)),
    ("gpus", "choose_allreduce", (1000, 1), dict(alpha_us=1, link_gbs=1, topology="switch")),
    ("message_bytes", "choose_allreduce", (-5, 8), dict(alpha_us=1, link_gbs=1, topology="nvls")),
    ("link_gbs", "choose_allreduce", (1000, 8), dict(alpha_us=1, link_gbs=-1, topology="ring")),
    ("gpus", "crossover_bytes", (1,), dict(alpha_us=1, link_gbs=1)),
    ("alpha_us", "crossover_bytes", (8,), dict(alpha_us=-0.5, link_gbs=1)),
    ("link_gbs", "crossover_bytes", (8,), dict(alpha_us=1, link_gbs=0)),
    ("message_bytes", "bus_bandwidth_gbs", (0, 10.0, 8), {}),
    ("time_us", "bus_bandwidth_gbs", (1000, 0, 8), {}),
    ("time_us", "bus_bandwidth_gbs", (1000, float("inf"), 8), {}),
    ("gpus", "bus_bandwidth_gbs", (1000, 10.0, 1), {}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _random(n, seed=144):
    rng = random.Random(seed)
    return [(rng.choice([0, rng.randint(1, 2**30)]), rng.randint(2, 72), rng.uniform(0, 30), rng.uniform(5, 900),
             rng.choice(["ring", "switch", "nvls"])) for _ in range(n)]


RANDOM = _random(20)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    size, gpus, alpha, link, topology = RANDOM[index]
    got, expected = both("choose_allreduce", size, gpus, alpha_us=alpha, link_gbs=link, topology=topology)
    check_close(got, expected, rtol=RTOL, atol=1e-12)
    got, expected = both("crossover_bytes", gpus, alpha_us=alpha, link_gbs=link)
    if expected is None:
        if got is not None:
            raise Mismatch("exact", path="result")
    else:
        check_close(got, expected, rtol=RTOL)
