"""Hidden cases for 153: StreamingLLM's kept positions at and past sink + window, eviction at and past
the budget, keep_recent at both ends, H2O ties to the oldest, the new token's own score, streaming runs
equal to streaming_keep at every length, random runs vs the reference. Positions are compared exactly,
captured shares with rtol=1e-9."""
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


def flat(n, value=1):
    return [[value] * (t + 1) for t in range(n)]


# --- streaming_keep ---------------------------------------------------------------------------

def test_keep_all_at_exactly_sink_plus_window():
    check_close(*both("streaming_keep", 7, 4, 3))


def test_one_past_sink_plus_window_drops_one():
    check_close(*both("streaming_keep", 8, 4, 3))


def test_long_sequence_sinks_and_window():
    check_close(*both("streaming_keep", 100000, 4, 12))


def test_no_sinks_is_a_sliding_window():
    check_close(*both("streaming_keep", 10, 0, 3))


def test_no_window_keeps_only_sinks():
    check_close(*both("streaming_keep", 10, 4, 0))


def test_empty_and_zero_budget():
    check_close(*both("streaming_keep", 0, 4, 3))
    check_close(*both("streaming_keep", 5, 0, 0))


# --- run_eviction -----------------------------------------------------------------------------

def test_no_eviction_at_exactly_the_budget():
    check_close(*both("run_eviction", flat(4), 4, "h2o", 1), rtol=RTOL)
    check_close(*both("run_eviction", flat(4), 4, "streaming", 1), rtol=RTOL)


def test_one_past_the_budget_evicts_one():
    rows = [[1], [1, 2], [2, 1, 1], [1, 3, 1, 1], [2, 1, 5, 1, 1]]
    check_close(*both("run_eviction", rows, 4, "h2o", 1), rtol=RTOL)
    check_close(*both("run_eviction", rows, 4, "streaming", 1), rtol=RTOL)


def test_empty_scores():
    check_close(*both("run_eviction", [], 3, "h2o", 0), rtol=RTOL)


def test_h2o_tie_evicts_the_oldest():
    # totals at step 3: position 1 -> 1 + 2 + 1 = 4, position 2 -> 1 + 3 = 4, position 0 largest
    rows = [[5], [5, 1], [5, 2, 1], [5, 1, 3, 1]]
    check_close(*both("run_eviction", rows, 3, "h2o", 1), rtol=RTOL)


def test_h2o_can_evict_the_oldest_token():
    check_close(*both("run_eviction", [[1], [1, 9], [1, 9, 9]], 2, "h2o", 0), rtol=RTOL)
    check_close(*both("run_eviction", [[1], [1, 9], [1, 9, 9], [1, 1, 9, 9]], 3, "h2o", 1), rtol=RTOL)


def test_h2o_strictly_smaller_later_wins():
    rows = [[5], [5, 1], [5, 2, 1], [5, 1, 2, 1]]
    check_close(*both("run_eviction", rows, 3, "h2o", 1), rtol=RTOL)


def test_h2o_counts_the_new_tokens_own_score():
    # with keep_recent 0 the newest token is a candidate; its own score decides
    rows = [[1], [1, 9], [12, 3, 1]]
    check_close(*both("run_eviction", rows, 2, "h2o", 0), rtol=RTOL)
    rows = [[1], [1, 9], [4, 3, 5]]
    check_close(*both("run_eviction", rows, 2, "h2o", 0), rtol=RTOL)


def test_keep_recent_zero_streaming_drops_the_newest():
    check_close(*both("run_eviction", flat(6), 3, "streaming", 0), rtol=RTOL)


def test_keep_recent_budget_minus_one():
    rows = [[1], [9, 1], [9, 1, 1], [9, 2, 1, 1], [9, 1, 1, 1, 1]]
    check_close(*both("run_eviction", rows, 3, "streaming", 2), rtol=RTOL)
    check_close(*both("run_eviction", rows, 3, "h2o", 2), rtol=RTOL)


def test_budget_one():
    rows = [[1], [2, 1], [1, 1, 1]]
    check_close(*both("run_eviction", rows, 1, "h2o", 0), rtol=RTOL)
    check_close(*both("run_eviction", rows, 1, "streaming", 0), rtol=RTOL)


def test_captured_counts_tokens_evicted_in_the_same_step():
    rows = [[1], [1, 1], [1, 1, 1], [1, 1, 1, 7]]
    check_close(*both("run_eviction", rows, 2, "h2o", 1), rtol=RTOL)


def test_low_scores_on_some_positions():
    rows = [[1], [1, 1], [1, 1, 1], [1, 1, 1, 1], [3, 1, 1, 1, 1]]
    check_close(*both("run_eviction", rows, 2, "h2o", 1), rtol=RTOL)
    check_close(*both("run_eviction", rows, 3, "streaming", 1), rtol=RTOL)


def test_streaming_run_matches_streaming_keep():
    for budget, recent in ((4, 1), (6, 3), (5, 0), (3, 2)):
        rows = flat(12)
        got = call(submission, "run_eviction")(rows, budget, "streaming", recent)
        expected = reference.run_eviction(rows, budget, "streaming", recent)
        if expected["kept"] != reference.streaming_keep(12, budget - recent, recent):
            raise RuntimeError("the reference's streaming run differs from streaming_keep")
        check_close(got, expected, rtol=RTOL)


def _scores(rng, n):
    heavy = set(rng.sample(range(n), min(n, rng.randint(0, 3))))
    rows = []
    for t in range(n):
        row = [rng.randint(1, 4) + (rng.randint(5, 40) if j in heavy or j == 0 else 0) for j in range(t + 1)]
        rows.append(row)
    return rows


_rng = random.Random(153)
RANDOM = []
for _ in range(20):
    n = _rng.randint(1, 40)
    budget = _rng.randint(1, 12)
    RANDOM.append((_scores(_rng, n), budget, _rng.choice(["h2o", "streaming"]), _rng.randint(0, budget - 1)))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    rows, budget, policy, recent = RANDOM[index]
    check_close(*both("run_eviction", rows, budget, policy, recent), rtol=RTOL)
    check_close(*both("streaming_keep", len(rows), budget - recent, recent))


# Cross-item and cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("scores", "run_eviction", ([[1], [1]], 2, "h2o", 0)),
    ("scores", "run_eviction", ([[1, 1]], 2, "h2o", 0)),
    ("scores", "run_eviction", ([[1], [1, 1], [1, 1]], 2, "h2o", 0)),
    ("scores", "run_eviction", ([[1], [1, 1], [1, 1, 1, 1]], 2, "h2o", 0)),
    ("scores", "run_eviction", ([[1], [1, 0]], 2, "h2o", 0)),
    ("keep_recent", "run_eviction", ([[1]], 2, "h2o", 2)),
    ("keep_recent", "run_eviction", ([[1]], 2, "streaming", 3)),
    ("keep_recent", "run_eviction", ([[1]], 1, "h2o", 1)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
