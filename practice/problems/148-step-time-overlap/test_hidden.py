"""Hidden cases for 148: each term, the bound's tie, random setups checked against the course
simulator's ``sim.Setup.step_time``, timelines with and without overlap, invalid inputs."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
H100 = {"params": 70e9, "weight_bytes": 140e9, "kv_bytes_per_token": 327680, "peak_flops": 8 * 989e12,
        "bandwidth": 8 * 3.35e12, "mfu": 0.5, "step_overhead": 0.5e-3, "comm_s_per_token": 0.0, "kv_serial": 0.0}


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_decode_small_batch_is_memory_bound():
    check_close(*both("step_breakdown", 8, 8 * 2000, H100), rtol=RTOL)


def test_prefill_is_compute_bound():
    check_close(*both("step_breakdown", 8192, 0, H100), rtol=RTOL)


def test_tie_is_memory():
    setup = dict(H100, params=1.0, peak_flops=2.0, mfu=1.0, weight_bytes=3.0, bandwidth=1.0)
    check_close(*both("step_breakdown", 3, 0, setup), rtol=RTOL)


def test_zero_tokens_and_context():
    check_close(*both("step_breakdown", 0, 0, dict(H100, kv_serial=1.0, comm_s_per_token=1e-6)), rtol=RTOL, atol=1e-15)


def test_serial_and_comm_terms():
    check_close(*both("step_breakdown", 64, 500_000, dict(H100, kv_serial=0.4, comm_s_per_token=2e-6)), rtol=RTOL)


def _setups(n, seed=148):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        setup = {"params": rng.uniform(1e9, 400e9), "weight_bytes": rng.uniform(0, 800e9),
                 "kv_bytes_per_token": rng.choice([0, 32768, 131072, 327680]),
                 "peak_flops": rng.uniform(100e12, 16e15), "bandwidth": rng.uniform(1e12, 64e12),
                 "mfu": rng.uniform(0.1, 1.0), "step_overhead": rng.uniform(0, 2e-3),
                 "comm_s_per_token": rng.choice([0.0, rng.uniform(0, 5e-6)]), "kv_serial": rng.choice([0.0, 1.0, rng.random()])}
        out.append((rng.randint(0, 16384), rng.randint(0, 2_000_000), setup))
    return out


RANDOM_STEPS = _setups(15)


@pytest.mark.parametrize("index", range(len(RANDOM_STEPS)), ids=[f"{i:02d}" for i in range(len(RANDOM_STEPS))])
def test_random_step_matches_sim(index):
    tokens, context, setup = RANDOM_STEPS[index]
    got, expected = both("step_breakdown", tokens, context, setup)
    try:
        from sim import Setup
    except ImportError:
        Setup = None
    if Setup is not None:      # the reference is the simulator's step rule, term by term
        sim_setup = Setup(kv_capacity_tokens=1, **setup)
        compute, memory, serial = sim_setup.roofline_terms(tokens, context)
        check_close([expected["compute"], expected["memory"], expected["serial"], expected["total"]],
                    [compute, memory, serial, sim_setup.step_time(tokens, context)], rtol=1e-12, atol=1e-18)
    check_close(got, expected, rtol=RTOL, atol=1e-15)


def test_sync_timeline():
    check_close(*both("overlap_timeline", [10.0, 10.0, 10.0], [4.0, 4.0, 4.0], False), rtol=RTOL)


def test_cpu_slower_than_gpu_with_overlap():
    check_close(*both("overlap_timeline", [2.0, 2.0, 2.0, 2.0], [3.0, 5.0, 1.0, 6.0], True), rtol=RTOL)


def test_one_step():
    check_close(*both("overlap_timeline", [7.5], [1.5], True), rtol=RTOL)
    check_close(*both("overlap_timeline", [7.5], [1.5], False), rtol=RTOL)


def test_zero_cpu_time():
    check_close(*both("overlap_timeline", [1.0, 2.0], [0.0, 0.0], True), rtol=RTOL, atol=1e-12)


def test_cpu_exactly_equal_to_gpu():
    check_close(*both("overlap_timeline", [3.0, 3.0, 3.0], [3.0, 3.0, 3.0], True), rtol=RTOL)


def _timelines(n, seed=1480):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 30)
        gpu = [rng.choice([0.0, rng.uniform(0.5, 20)]) for _ in range(k)]
        cpu = [rng.choice([0.0, rng.uniform(0.1, 8), rng.uniform(5, 30)]) for _ in range(k)]
        out.append((gpu, cpu, rng.random() < 0.5))
    return out


RANDOM_TIMELINES = _timelines(15)


@pytest.mark.parametrize("index", range(len(RANDOM_TIMELINES)), ids=[f"{i:02d}" for i in range(len(RANDOM_TIMELINES))])
def test_random_timeline(index):
    check_close(*both("overlap_timeline", *RANDOM_TIMELINES[index]), rtol=RTOL, atol=1e-9)


BAD = [
    ("tokens", "step_breakdown", (-1, 0, H100)),
    ("tokens", "step_breakdown", (1.0, 0, H100)),
    ("context", "step_breakdown", (1, -1, H100)),
    ("setup", "step_breakdown", (1, 1, {k: v for k, v in H100.items() if k != "mfu"})),
    ("setup", "step_breakdown", (1, 1, dict(H100, params=0))),
    ("setup", "step_breakdown", (1, 1, dict(H100, bandwidth=float("inf")))),
    ("setup", "step_breakdown", (1, 1, dict(H100, weight_bytes=-1))),
    ("setup", "step_breakdown", (1, 1, dict(H100, mfu=0))),
    ("setup", "step_breakdown", (1, 1, dict(H100, mfu=1.01))),
    ("setup", "step_breakdown", (1, 1, dict(H100, kv_serial=-0.1))),
    ("setup", "step_breakdown", (1, 1, dict(H100, kv_serial=1.1))),
    ("setup", "step_breakdown", (1, 1, dict(H100, step_overhead=float("nan")))),
    ("gpu_ms", "overlap_timeline", ([], [], True)),
    ("gpu_ms", "overlap_timeline", ([-1.0], [1.0], True)),
    ("gpu_ms", "overlap_timeline", ([float("inf")], [1.0], True)),
    ("cpu_ms", "overlap_timeline", ([1.0, 1.0], [1.0], True)),
    ("cpu_ms", "overlap_timeline", ([1.0], [-0.5], True)),
    ("overlap", "overlap_timeline", ([1.0], [1.0], 1)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
