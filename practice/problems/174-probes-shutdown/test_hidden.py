"""Hidden cases for 174: a probe landing exactly at the load time (ready), the last allowed probe
succeeding or failing, zero delay and zero load; shutdown boundaries: arrival exactly at SIGTERM, exactly
when the load balancer drops the pod, a request ending exactly at the kill, zero grace and zero delay,
refusing versus accepting after SIGTERM, random cases vs the reference. Counts exactly, times with
rtol=1e-9."""
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


def R(a, d):
    return {"arrival_s": a, "duration_s": d}


def test_probe_exactly_at_load_is_ready():
    check_close(*both("startup", 30.0, 10.0, 10.0, 3), rtol=RTOL)


def test_last_allowed_probe_succeeds():
    check_close(*both("startup", 29.5, 10.0, 10.0, 3), rtol=RTOL)


def test_last_allowed_probe_fails():
    check_close(*both("startup", 30.5, 10.0, 10.0, 3), rtol=RTOL)


def test_one_probe_only():
    check_close(*both("startup", 5.0, 5.0, 1.0, 1), rtol=RTOL)
    check_close(*both("startup", 5.5, 5.0, 1.0, 1), rtol=RTOL)


def test_instant_load():
    check_close(*both("startup", 0.0, 0.0, 10.0, 1), rtol=RTOL)


def test_70b_load_with_default_like_probes():
    check_close(*both("startup", 240.0, 0.0, 10.0, 3), rtol=RTOL)
    check_close(*both("startup", 240.0, 0.0, 10.0, 30), rtol=RTOL)


def test_arrival_exactly_at_sigterm():
    check_close(*both("shutdown", [R(10.0, 1.0)], 10.0, 5.0, 30.0, False))
    check_close(*both("shutdown", [R(10.0, 1.0)], 10.0, 5.0, 30.0, True))


def test_arrival_exactly_when_dropped():
    check_close(*both("shutdown", [R(15.0, 1.0), R(14.999, 1.0)], 10.0, 5.0, 30.0, True))


def test_request_ending_exactly_at_kill():
    check_close(*both("shutdown", [R(5.0, 35.0), R(5.0, 35.001)], 10.0, 5.0, 30.0, True))


def test_zero_grace_cuts_everything_running():
    check_close(*both("shutdown", [R(0.0, 10.0), R(1.0, 9.0), R(2.0, 8.5)], 10.0, 0.0, 0.0, True))


def test_zero_lb_delay_reroutes_from_sigterm():
    check_close(*both("shutdown", [R(9.0, 1.0), R(10.0, 1.0), R(11.0, 1.0)], 10.0, 0.0, 30.0, False))


def test_zero_duration_requests():
    check_close(*both("shutdown", [R(40.0, 0.0), R(12.0, 0.0)], 10.0, 40.0, 30.0, True))


def test_no_requests():
    check_close(*both("shutdown", [], 10.0, 5.0, 30.0, True))


def _requests(rng):
    return [R(rng.choice([rng.uniform(0, 60), float(rng.randint(0, 60))]),
              rng.choice([rng.uniform(0, 90), float(rng.randint(0, 60))])) for _ in range(rng.randint(0, 40))]


_rng = random.Random(174)
RANDOM = [(_requests(_rng), float(_rng.randint(0, 30)), float(_rng.randint(0, 10)), float(_rng.choice([0, 30, 60, 120])),
           _rng.random() < 0.5, _rng.uniform(0, 400), float(_rng.randint(0, 30)), float(_rng.choice([1, 5, 10])),
           _rng.randint(1, 40)) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    reqs, sigterm, delay, grace, accept, load, initial, period, threshold = RANDOM[index]
    check_close(*both("shutdown", reqs, sigterm, delay, grace, accept))
    check_close(*both("startup", load, initial, period, threshold), rtol=RTOL)
