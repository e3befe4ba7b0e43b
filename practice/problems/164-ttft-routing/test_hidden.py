"""Hidden cases for 164: the SLO edge (equal is accepted), ties to the lowest index, idle and busy
instances, arrivals exactly when a backlog ends, rejected requests leaving no load, random fleets
vs the reference, and the reference's predictions checked against the TTFTs of the course
simulator's instances (sim.engine.Instance) where the prediction is exact. Floats are compared
with rtol=1e-9; instance numbers exactly."""
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


def I(queued=0, step=0.0, s=0.25):
    return {"queued_tokens": queued, "step_left_s": step, "s_per_token": s}


def R(t, n):
    return {"arrival_s": t, "input_len": n}


# --- route ------------------------------------------------------------------------------------

def test_prediction_equal_to_slo_is_accepted():
    # 0.5 + (2 + 2) x 0.25 = 1.5 exactly
    check_close(*both("route", 2, [I(2, 0.5)], 1.5), rtol=RTOL)


def test_prediction_just_above_slo_is_rejected():
    check_close(*both("route", 2, [I(2, 0.5)], math.nextafter(1.5, 0.0)), rtol=RTOL)


def test_tie_goes_to_the_lowest_index():
    # 0.5 + 4 x 0.25 = 1.5 and 1.0 + 1 x 0.5 = 1.5: instances 1 and 2 tie, 0 is worse
    check_close(*both("route", 2, [I(6, 0.0), I(2, 0.5), I(0, 0.5, 0.5)], 10.0), rtol=RTOL)


def test_later_strictly_smaller_wins():
    check_close(*both("route", 2, [I(2, 0.5), I(2, 0.5), I(1, 0.5)], 10.0), rtol=RTOL)


def test_queue_length_beats_request_count():
    # a long backlog on a fast GPU against an idle slow one
    check_close(*both("route", 1000, [I(30000, 0.01, 1e-4), I(0, 0.03, 4e-4)], 5.0), rtol=RTOL)
    check_close(*both("route", 1000, [I(3000, 0.01, 1e-4), I(0, 0.03, 4e-4)], 5.0), rtol=RTOL)


def test_every_instance_over_slo_rejects():
    check_close(*both("route", 4000, [I(9000, 0.02, 1e-4), I(12000, 0.0, 1e-4)], 1.0), rtol=RTOL)


def test_single_instance_one_token():
    check_close(*both("route", 1, [I(0, 0.0, 0.002)], 0.002), rtol=RTOL)


# --- route_stream -----------------------------------------------------------------------------

def test_no_requests():
    check_close(*both("route_stream", [], [I()], 1.0), rtol=RTOL)


def test_idle_instance_starts_at_arrival():
    # the backlog ended at 1.0; a request at 3.0 does not wait
    check_close(*both("route_stream", [R(3.0, 4)], [I(4, 0.0)], 1.0), rtol=RTOL)


def test_arrival_exactly_when_the_backlog_ends():
    check_close(*both("route_stream", [R(0.0, 4), R(1.0, 4)], [I(0, 0.0), I(0, 0.0, 0.5)], 1.0), rtol=RTOL)


def test_arrival_during_a_backlog_waits_for_it():
    check_close(*both("route_stream", [R(0.0, 8), R(0.5, 2)], [I(0, 0.0)], 3.0), rtol=RTOL)


def test_rejected_request_adds_no_load():
    # the 40-token request is rejected; the next one still sees the instance idle
    check_close(*both("route_stream", [R(0.0, 40), R(0.0, 4)], [I(0, 0.0)], 1.0), rtol=RTOL)


def test_first_instance_is_chosen_and_loaded():
    check_close(*both("route_stream", [R(0.0, 4), R(0.0, 4), R(0.0, 4)], [I(), I(), I()], 10.0), rtol=RTOL)


def test_equal_arrival_times_and_slo_edge():
    reqs = [R(0.25, 2), R(0.25, 2), R(0.25, 2)]
    check_close(*both("route_stream", reqs, [I(2, 0.5)], 2.5), rtol=RTOL)
    check_close(*both("route_stream", reqs, [I(2, 0.5)], math.nextafter(2.5, 0.0)), rtol=RTOL)


def test_initial_step_left_and_queue_set_the_backlog():
    check_close(*both("route_stream", [R(0.0, 1), R(0.1, 1)], [I(3, 0.125, 0.5), I(0, 2.0, 0.5)], 5.0),
                rtol=RTOL)


def _fleet(rng):
    n = rng.randint(1, 6)
    instances = [{"queued_tokens": rng.choice([0, rng.randint(0, 40000)]),
                  "step_left_s": rng.choice([0.0, rng.uniform(0, 0.05)]),
                  "s_per_token": rng.choice([5e-5, 1e-4, 2e-4, rng.uniform(2e-5, 5e-4)])} for _ in range(n)]
    t, reqs = 0.0, []
    for _ in range(rng.randint(0, 80)):
        t += rng.expovariate(rng.choice([2.0, 10.0, 40.0]))
        reqs.append(R(t, rng.randint(1, 16000)))
    return reqs, instances, rng.choice([0.5, 1.0, 2.0, 5.0])


_rng = random.Random(164)
RANDOM = [_fleet(_rng) for _ in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    reqs, instances, slo = RANDOM[index]
    check_close(*both("route_stream", reqs, instances, slo), rtol=RTOL)
    n = reqs[0]["input_len"] if reqs else 512
    check_close(*both("route", n, instances, slo), rtol=RTOL)


# --- against the simulator --------------------------------------------------------------------

CHUNK = 512


def _sim_fleet(seed):
    """Idle instances with different GPUs; prompts are whole chunks and produce one token, the step
    overhead is 0 and every chunk is compute-bound: sim's TTFT is then exactly the prediction."""
    rng = random.Random(seed)
    peaks = [rng.choice([400e12, 989e12, 1979e12]) for _ in range(rng.randint(1, 4))]
    setup = dict(params=8e9, weight_bytes=16e9, kv_bytes_per_token=0, kv_capacity_tokens=10**9, mfu=0.5,
                 step_overhead=0.0, max_num_batched_tokens=CHUNK, max_num_seqs=10**6)
    instances = [{"queued_tokens": 0, "step_left_s": 0.0, "s_per_token": 2 * setup["params"] / (peak * setup["mfu"])}
                 for peak in peaks]
    t, reqs = 0.0, []
    for _ in range(rng.randint(5, 60)):
        t += rng.choice([0.0, rng.expovariate(8.0)])
        reqs.append(R(t, CHUNK * rng.randint(1, 16)))
    return reqs, instances, peaks, setup, rng.choice([0.3, 0.6, 1.5])


SIM = [_sim_fleet(164_000 + i) for i in range(6)]


@pytest.mark.parametrize("index", range(len(SIM)), ids=[f"{i:02d}" for i in range(len(SIM))])
def test_predictions_match_sim(index):
    reqs, instances, peaks, setup, slo = SIM[index]
    got, expected = both("route_stream", reqs, instances, slo)
    try:
        from sim import Setup
        from sim.engine import Instance
    except ImportError:
        Instance = None
    if Instance is not None:
        engines = [Instance(Setup(peak_flops=peak, **setup)) for peak in peaks]
        local = []
        for r, i in zip(reqs, expected["instance"]):
            local.append(engines[i].submit(r["arrival_s"], r["input_len"], 1) if i >= 0 else None)
        results = []
        for e in engines:
            e.advance()
            results.append(e.result())
        for r, i, k, pred in zip(reqs, expected["instance"], local, expected["ttft_s"]):
            if i < 0:
                continue
            ttft = float(results[i].first_token[k]) - r["arrival_s"]
            if not math.isclose(ttft, pred, rel_tol=1e-9, abs_tol=1e-12):
                raise RuntimeError("the reference's predicted TTFT differs from sim's")
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("input_len", "route", (0, [I()], 1.0)),
    ("input_len", "route", (2.0, [I()], 1.0)),
    ("input_len", "route", (True, [I()], 1.0)),
    ("instances", "route", (1, [], 1.0)),
    ("instances", "route", (1, (I(),), 1.0)),
    ("instances", "route", (1, [I(-1)], 1.0)),
    ("instances", "route", (1, [I(1.5)], 1.0)),
    ("instances", "route", (1, [I(0, -0.001)], 1.0)),
    ("instances", "route", (1, [I(0, float("inf"))], 1.0)),
    ("instances", "route", (1, [I(0, 0.0, 0.0)], 1.0)),
    ("instances", "route", (1, [I(0, 0.0, float("nan"))], 1.0)),
    ("instances", "route", (1, [{"queued_tokens": 0, "step_left_s": 0.0}], 1.0)),
    ("instances", "route", (1, [dict(I(), extra=1)], 1.0)),
    ("instances", "route", (1, [I(), "x"], 1.0)),
    ("ttft_slo_s", "route", (1, [I()], 0.0)),
    ("ttft_slo_s", "route", (1, [I()], -1.0)),
    ("ttft_slo_s", "route", (1, [I()], float("inf"))),
    ("ttft_slo_s", "route_stream", ([], [I()], float("nan"))),
    ("instances", "route_stream", ([], [I(0, 0.0, -1e-4)], 1.0)),
    ("requests", "route_stream", ("no", [I()], 1.0)),
    ("requests", "route_stream", ([R(-0.1, 1)], [I()], 1.0)),
    ("requests", "route_stream", ([R(1.0, 1), R(0.5, 1)], [I()], 1.0)),
    ("requests", "route_stream", ([R(0.0, 0)], [I()], 1.0)),
    ("requests", "route_stream", ([R(0.0, 1.0)], [I()], 1.0)),
    ("requests", "route_stream", ([R(float("nan"), 1)], [I()], 1.0)),
    ("requests", "route_stream", ([R(0.0, 1), R(float("inf"), 1)], [I()], 1.0)),
    ("requests", "route_stream", ([{"arrival_s": 0.0}], [I()], 1.0)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
