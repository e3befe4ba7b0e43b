"""Hidden cases for 126: conventions, edge cases, invalid inputs, random traces vs the reference.

Floats are compared with rtol=1e-9 (atol=1e-12 for values that may be zero).
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL, ATOL = 1e-9, 1e-12


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def test_single_token_request():
    got, expected = both("request_metrics", 1.0, [1.25])
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_request_metrics_basic():
    got, expected = both("request_metrics", 0.5, [0.9, 1.0, 1.3, 1.35])
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_tie_tokens_same_time():
    got, expected = both("request_metrics", 0.0, [0.0, 0.0, 0.1])
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_percentile_nearest_rank_not_interpolated():
    got, expected = both("percentile", [1.0, 2.0, 3.0, 4.0], 50)
    check_close(got, expected)


def test_percentile_multiply_before_divide():
    got, expected = both("percentile", list(range(100, 0, -1)), 7)
    check_close(got, expected)


def test_percentile_p100_is_max():
    got, expected = both("percentile", [3.0, 9.5, 1.0], 100)
    check_close(got, expected)


def test_percentile_small_p_is_min():
    got, expected = both("percentile", [3.0, 9.5, 1.0], 0.1)
    check_close(got, expected)


def test_percentile_single_value():
    got, expected = both("percentile", [42.0], 99)
    check_close(got, expected)


def test_percentile_of_ints_returns_float():
    got, expected = both("percentile", [5, 1, 3], 50)
    check_close(got, expected)
    if not isinstance(got, float):
        from judgekit import Mismatch
        raise Mismatch("type", path="result", want="float", got=type(got).__name__)


def test_percentile_p_just_below_100_is_max():
    got, expected = both("percentile", [float(i) for i in range(10)], 99.99)
    check_close(got, expected)


def test_summarize_all_single_token():
    reqs = [{"arrival": 0.0, "token_times": [0.3]}, {"arrival": 0.2, "token_times": [0.4]}]
    got, expected = both("summarize", reqs, 0.25, 0.01, p=50)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_summarize_slo_is_inclusive():
    reqs = [{"arrival": 0.0, "token_times": [0.5, 1.0, 1.5]}, {"arrival": 1.0, "token_times": [2.0, 4.0]}]
    got, expected = both("summarize", reqs, 0.5, 0.5)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_summarize_default_p99():
    reqs = [{"arrival": i * 0.1, "token_times": [i * 0.1 + 0.05 + 0.01 * (i % 7) + 0.02 * k
                                                 for k in range(1 + i % 5)]} for i in range(120)]
    got, expected = both("summarize", reqs, 0.1, 0.03)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


BAD = [
    ("token_times", "request_metrics", (0.0, []), {}),
    ("token_times", "request_metrics", (1.0, [0.5, 1.2]), {}),
    ("token_times", "request_metrics", (0.0, [0.1, 0.3, 0.2]), {}),
    ("token_times", "request_metrics", (0.0, [0.1, float("nan")]), {}),
    ("arrival", "request_metrics", (float("inf"), [0.1]), {}),
    ("p", "percentile", ([1.0, 2.0], 0), {}),
    ("p", "percentile", ([1.0, 2.0], 101), {}),
    ("values", "percentile", ([], 50), {}),
    ("requests", "summarize", ([], 1.0, 1.0), {}),
    ("requests", "summarize", ([{"arrival": 1.0, "token_times": [1.0]}], 1.0, 1.0), {}),
    ("ttft_slo", "summarize", ([{"arrival": 0.0, "token_times": [1.0]}], 0, 1.0), {}),
    ("tpot_slo", "summarize", ([{"arrival": 0.0, "token_times": [1.0]}], 1.0, -1), {}),
    ("tpot_slo", "summarize", ([{"arrival": 0.0, "token_times": [1.0]}], 1.0, 0), {}),
    ("ttft_slo", "summarize", ([{"arrival": 0.0, "token_times": [1.0]}], float("inf"), 1.0), {}),
    ("tpot_slo", "summarize", ([{"arrival": 0.0, "token_times": [1.0]}], 1.0, float("nan")), {}),
    ("requests", "summarize", ([{"arrival": 0.0}], 1.0, 1.0), {}),
    ("requests", "summarize", ([{"token_times": [1.0]}], 1.0, 1.0), {}),
    ("p", "percentile", ([1.0, 2.0], 100.5), {}),
    ("arrival", "request_metrics", (True, [1.0]), {}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_slo_just_above_zero_is_valid():
    reqs = [{"arrival": 0.0, "token_times": [1e-9, 1e-9]}, {"arrival": 0.0, "token_times": [0.5]}]
    got, expected = both("summarize", reqs, 1e-9, 1e-12)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def _trace(seed):
    rng = random.Random(seed)
    t, reqs = 0.0, []
    for _ in range(rng.randint(1, 60)):
        t += rng.expovariate(5.0)
        first = t + rng.uniform(0.01, 1.5)
        times = [first]
        for _ in range(rng.randint(0, 40)):
            times.append(times[-1] + rng.uniform(0.005, 0.09))
        reqs.append({"arrival": t, "token_times": times})
    return reqs, rng.uniform(0.1, 1.0), rng.uniform(0.02, 0.06), rng.choice([50, 90, 95, 99, 99.9])


@pytest.mark.parametrize("seed", range(15), ids=[f"{i:02d}" for i in range(15)])
def test_random(seed):
    reqs, ttft_slo, tpot_slo, p = _trace(126_000 + seed)
    got, expected = both("summarize", reqs, ttft_slo, tpot_slo, p=p)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("seed", range(4), ids=[f"{i:02d}" for i in range(4)])
def test_random_default_p99(seed):
    reqs, ttft_slo, tpot_slo, _ = _trace(126_100 + seed)
    reqs = reqs * 3                    # at least 3 requests, so P99 and P100 can differ
    got, expected = both("summarize", reqs, ttft_slo, tpot_slo)
    check_close(got, expected, rtol=RTOL, atol=ATOL)
