"""Hidden cases for 130: threshold and balance edges, ties, hold windows, random traffic with shared
prefixes vs the reference; with caching off, the rule is checked against sim.fleet's least_requests."""
import random
from types import SimpleNamespace

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(*args, **kwargs):
    expected = reference.route_requests(*args, **kwargs)
    got = call(submission, "route_requests")(*args, **kwargs)
    return got, expected


def Q(prompt, hold=100):
    return {"prompt": prompt, "hold": hold}


def test_match_ratio_equal_to_threshold_goes_to_least():
    check_close(*both([Q([1, 2, 3, 4]), Q([1, 2, 7, 7])], 2))


def test_match_ratio_just_above_threshold_follows_cache():
    check_close(*both([Q([1, 2, 3, 4, 5]), Q([1, 2, 3, 9, 9])], 2))


def test_threshold_zero_any_match_follows():
    check_close(*both([Q([1, 2]), Q([1, 5, 5, 5, 5])], 3, cache_threshold=0.0))
    check_close(*both([Q([1, 2]), Q([2, 5])], 3, cache_threshold=0.0))


def test_threshold_one_never_follows():
    check_close(*both([Q([1, 2]), Q([1, 2])], 2, cache_threshold=1.0))


def test_default_threshold_and_balance():
    check_close(*both([Q([7] * 10)] * 12 + [Q([7] * 9 + [1])], 3))


def test_imbalance_exactly_at_the_edges():
    # loads 5 and 0: difference 5 > 4 -> fall back; loads 4 and 0: difference 4, not > 4 -> cache
    hot = [Q([3, 3, 3, 3])] * 5
    check_close(*both(hot + [Q([3, 3, 3, 3])], 2, balance_abs=4))
    check_close(*both(hot[:4] + [Q([3, 3, 3, 3])], 2, balance_abs=4))


def test_relative_balance_condition():
    # loads 6 and 4: difference 2 > 1 but 6 > 1.5 * 4 is false -> still cache-aware
    reqs = [Q([1, 1, 1], 50)] * 6 + [Q([2, 2, 2], 50)] * 4 + [Q([1, 1, 1])]
    check_close(*both(reqs, 2, balance_abs=1, cache_threshold=0.0, balance_rel=1.5))
    check_close(*both(reqs, 2, balance_abs=1, cache_threshold=0.0, balance_rel=1.0))
    check_close(*both(reqs, 2, balance_abs=0, cache_threshold=0.0, balance_rel=1.4))


def test_default_relative_balance():
    # loads reach (10, 5): 10 > 1.5 x 5, so the 16th request leaves its cached worker
    a, b = [1, 1, 1, 1], [2, 2, 2, 2]
    reqs = [Q(a), Q(b)] + [Q(b)] * 4 + [Q(a)] * 9 + [Q(a)]
    check_close(*both(reqs, 2))


def test_load_exactly_rel_times_min_is_balanced():
    a, b = [1, 1, 1], [2, 2, 2]
    check_close(*both([Q(a), Q(b), Q(a), Q(b), Q(a), Q(a)], 2, balance_abs=0, balance_rel=1.5, cache_threshold=0.0))


def test_hold_zero_and_exact_expiry():
    reqs = [Q([1, 2], 0), Q([5, 6], 1), Q([7, 8], 2), Q([9, 9], 0), Q([1, 2], 0), Q([4], 0)]
    check_close(*both(reqs, 2, cache_threshold=1.0))
    check_close(*both(reqs, 3, cache_threshold=0.0, balance_abs=0, balance_rel=1.0))


def test_match_tie_prefers_less_loaded_then_lower_id():
    reqs = [Q([1, 2, 3], 9), Q([1, 2, 4], 9), Q([5], 9), Q([1, 2, 9], 9), Q([1, 2, 8], 0)]
    check_close(*both(reqs, 3, cache_threshold=0.5))


def test_single_worker():
    check_close(*both([Q([1]), Q([2]), Q([1])], 1))


def _traffic(seed):
    rng = random.Random(seed)
    prefixes = [[rng.randrange(100) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 5))]
    reqs = []
    for _ in range(rng.randint(5, 60)):
        p = list(rng.choice(prefixes)) if rng.random() < 0.8 else []
        p += [rng.randrange(100) for _ in range(rng.randint(0 if p else 1, 8))]
        reqs.append(Q(p, rng.choice([0, 1, rng.randint(0, 20)])))
    kwargs = dict(cache_threshold=rng.choice([0.0, 0.3, 0.5, 0.8]), balance_abs=rng.choice([0, 2, 4, 8]),
                  balance_rel=rng.choice([1.0, 1.5, 3.0]))
    return reqs, rng.randint(1, 6), kwargs


RANDOM = [_traffic(130_000 + i) for i in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    reqs, n, kwargs = RANDOM[index]
    check_close(*both(reqs, n, **kwargs))


@pytest.mark.parametrize("index", range(5), ids=[f"{i:02d}" for i in range(5)])
def test_no_cache_is_least_requests_of_sim(index):
    reqs, n, kwargs = RANDOM[index]
    kwargs = dict(kwargs, cache_threshold=1.0)
    got, expected = both(reqs, n, **kwargs)
    try:
        from sim.fleet.routers import LeastRequests
    except ImportError:
        LeastRequests = None
    if LeastRequests is not None:
        # with caching off every choice is the least loaded worker: exactly sim's least_requests
        router, picks = LeastRequests(), []
        for i, r in enumerate(reqs):
            load = [sum(1 for j in range(i) if picks[j] == w and j + reqs[j]["hold"] >= i) for w in range(n)]
            workers = [SimpleNamespace(id=w, pool="mixed", outstanding=load[w]) for w in range(n)]
            picks.append(router.select_worker(None, workers).id)
        if picks != expected:
            raise RuntimeError("the reference differs from sim.fleet's least_requests")
    check_close(got, expected)


BAD = [
    ("num_workers", ([Q([1])], 0), {}),
    ("num_workers", ([Q([1])], 2.0), {}),
    ("cache_threshold", ([Q([1])], 2), {"cache_threshold": -0.1}),
    ("cache_threshold", ([Q([1])], 2), {"cache_threshold": 1.01}),
    ("balance_abs", ([Q([1])], 2), {"balance_abs": -1}),
    ("balance_abs", ([Q([1])], 2), {"balance_abs": 1.5}),
    ("balance_rel", ([Q([1])], 2), {"balance_rel": 0.99}),
    ("balance_rel", ([Q([1])], 2), {"balance_rel": float("inf")}),
    ("requests", ("abc", 2), {}),
    ("requests", ([{"prompt": [], "hold": 1}], 2), {}),
    ("requests", ([{"prompt": [1], "hold": -1}], 2), {}),
    ("requests", ([{"prompt": [1]}], 2), {}),
    ("requests", ([{"prompt": [1], "hold": True}], 2), {}),
]


@pytest.mark.parametrize("field,args,kwargs", BAD, ids=[f"{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, args, kwargs):
    expect_value_error(call(submission, "route_requests"), *args, field=field, **kwargs)


# No sim cross-check: sim's prefix_aware has no threshold and, out of balance, picks the best-cached worker under a cap.
