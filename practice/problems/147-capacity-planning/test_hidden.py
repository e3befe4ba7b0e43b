"""Hidden cases for 147: crossings, edge cases, invalid inputs, random curves vs the reference.

Floats are compared with rtol=1e-9; integers exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def test_all_points_meet_slo():
    got, expected = both("max_qps_under_slo", [1, 2, 3], [0.1, 0.2, 0.3], [0.01, 0.02, 0.03], 1.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_first_point_already_breaks():
    got, expected = both("max_qps_under_slo", [5, 10], [3.0, 4.0], [0.01, 0.02], 2.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_equal_to_slo_is_ok():
    got, expected = both("max_qps_under_slo", [5, 10, 15], [1.0, 2.0, 2.5], [0.01, 0.02, 0.03], 2.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_only_tpot_breaks():
    got, expected = both("max_qps_under_slo", [2, 4, 6], [0.2, 0.3, 0.4], [0.03, 0.045, 0.065], 2.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_noisy_recovery_ignored():
    got, expected = both("max_qps_under_slo", [1, 2, 3, 4], [0.5, 2.5, 1.0, 1.5], [0.01] * 4, 2.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_returns_float_for_int_qps():
    got, expected = both("max_qps_under_slo", [3, 6], [0.1, 0.2], [0.01, 0.02], 1.0, 1.0)
    check_close(got, expected, rtol=RTOL)
    if not isinstance(got, float):
        from judgekit import Mismatch
        raise Mismatch("type", path="result", want="float", got=type(got).__name__)


def test_equal_at_first_point_is_ok():
    got, expected = both("max_qps_under_slo", [5, 10], [2.0, 3.0], [0.01, 0.02], 2.0, 0.05)
    check_close(got, expected, rtol=RTOL)


def test_zero_p99_and_zero_lower_bounds_are_valid():
    got, expected = both("max_qps_under_slo", [0.5, 1.5], [0.0, 0.0], [0.0, 0.1], 1.0, 0.05)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("concurrency", 0, 0, 0, 1)
    check_close(got, expected, rtol=RTOL)


def test_small_rates_below_one_are_valid():
    got, expected = both("replicas", 3, 0.5, headroom=1.0)
    check_close(got, expected)
    got, expected = both("concurrency", 0.5, 0.2, 0.01, 11)
    check_close(got, expected, rtol=RTOL)


def test_replicas_default_headroom():
    got, expected = both("replicas", 100, 10)
    check_close(got, expected)


def test_replicas_exact_multiple():
    got, expected = both("replicas", 160, 20, headroom=0.8)
    check_close(got, expected)


def test_replicas_with_failures():
    got, expected = both("replicas", 200, 16.6, headroom=0.7, failures=2)
    check_close(got, expected)


def test_replicas_zero_traffic():
    got, expected = both("replicas", 0, 10, failures=1)
    check_close(got, expected)


def test_concurrency_one_token():
    got, expected = both("concurrency", 12.5, 0.4, 0.05, 1)
    check_close(got, expected, rtol=RTOL)


def test_concurrency_chat():
    got, expected = both("concurrency", 16, 0.8, 0.04, 500)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("qps", "max_qps_under_slo", ([], [], [], 1.0, 1.0), {}),
    ("qps", "max_qps_under_slo", ([2, 1], [0.1, 0.2], [0.1, 0.2], 1.0, 1.0), {}),
    ("qps", "max_qps_under_slo", ([0, 1], [0.1, 0.2], [0.1, 0.2], 1.0, 1.0), {}),
    ("ttft_p99", "max_qps_under_slo", ([1, 2], [0.1], [0.1, 0.2], 1.0, 1.0), {}),
    ("tpot_p99", "max_qps_under_slo", ([1, 2], [0.1, 0.2], [0.1, float("nan")], 1.0, 1.0), {}),
    ("ttft_slo", "max_qps_under_slo", ([1, 2], [0.1, 0.2], [0.1, 0.2], 0, 1.0), {}),
    ("tpot_slo", "max_qps_under_slo", ([1, 2], [0.1, 0.2], [0.1, 0.2], 1.0, -0.05), {}),
    ("per_replica_qps", "replicas", (100, 0), {}),
    ("peak_qps", "replicas", (-1, 10), {}),
    ("headroom", "replicas", (100, 10), {"headroom": 1.5}),
    ("failures", "replicas", (100, 10), {"failures": -1}),
    ("output_len", "concurrency", (10, 0.5, 0.05, 0), {}),
    ("tpot_s", "concurrency", (10, 0.5, -0.05, 10), {}),
    ("qps", "max_qps_under_slo", ([1, 1], [0.1, 0.2], [0.1, 0.2], 1.0, 1.0), {}),
    ("ttft_slo", "max_qps_under_slo", ([1, 2], [0.1, 0.2], [0.1, 0.2], float("inf"), 1.0), {}),
    ("ttft_p99", "max_qps_under_slo", ([1, 2], [0.1, -0.2], [0.1, 0.2], 1.0, 1.0), {}),
    ("per_replica_qps", "replicas", (100, float("inf")), {}),
    ("headroom", "replicas", (100, 10), {"headroom": 0}),
    ("failures", "replicas", (100, 10), {"failures": 1.0}),
    ("qps", "concurrency", (-1, 0.5, 0.05, 10), {}),
    ("qps", "concurrency", (float("nan"), 0.5, 0.05, 10), {}),
    ("ttft_s", "concurrency", (10, -0.5, 0.05, 10), {}),
    ("ttft_s", "concurrency", (10, float("inf"), 0.05, 10), {}),
    ("output_len", "concurrency", (10, 0.5, 0.05, 2.0), {}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _curve(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    step = rng.uniform(0.5, 5)
    qps = [step * (i + 1) for i in range(n)]
    cap = rng.uniform(0.3, 1.2) * qps[-1]
    ttft = [0.2 + 0.1 * q / cap + max(0.0, q - cap) * rng.uniform(0.3, 2) for q in qps]
    tpot = [0.02 + 0.02 * q / cap + max(0.0, q - 0.9 * cap) * rng.uniform(0.001, 0.01) for q in qps]
    return qps, ttft, tpot, rng.uniform(0.5, 2.5), rng.uniform(0.03, 0.06)


@pytest.mark.parametrize("seed", range(12), ids=[f"{i:02d}" for i in range(12)])
def test_random_curve(seed):
    got, expected = both("max_qps_under_slo", *_curve(147_000 + seed))
    check_close(got, expected, rtol=RTOL)
