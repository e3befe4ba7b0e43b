"""Hidden cases for 177: free GPUs used first, borrowing, reclaiming by a tenant exactly at its quota
and one GPU over it, victims by lowest priority then latest start, a tenant leaving the candidates once
back within quota, not enough to reclaim (nothing preempted), pending order and skipping (small jobs
first), cancelled pending jobs, restarted jobs with a new start, random event streams vs the reference
(and the reference checked: the running jobs never exceed the cluster)."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(*args):
    expected = reference.schedule(*args)
    got = call(submission, "schedule")(*args)
    return got, expected


def S(job, tenant, gpus, priority=0):
    return {"op": "submit", "job": job, "tenant": tenant, "gpus": gpus, "priority": priority}


def F(job):
    return {"op": "finish", "job": job}


Q = {"A": 2, "B": 6}


def test_no_events():
    check_close(*both(8, Q, []))


def test_free_gpus_first_then_borrowing():
    check_close(*both(8, Q, [S("a1", "A", 5), S("a2", "A", 3)]))


def test_reclaim_exactly_at_quota():
    check_close(*both(8, Q, [S("a1", "A", 8), S("b1", "B", 6)]))


def test_one_gpu_over_quota_cannot_reclaim():
    check_close(*both(8, Q, [S("a1", "A", 8), S("b1", "B", 7)]))


def test_victims_lowest_priority_first():
    ev = [S("a1", "A", 2, 3), S("a2", "A", 2, 1), S("a3", "A", 2, 2), S("a4", "A", 2, 5), S("b1", "B", 4)]
    check_close(*both(8, Q, ev))


def test_victims_tie_goes_to_the_latest_started():
    ev = [S("a1", "A", 2), S("a2", "A", 2), S("a3", "A", 2), S("a4", "A", 2), S("b1", "B", 2)]
    check_close(*both(8, Q, ev))


def test_tenant_back_within_quota_is_not_a_victim():
    # A borrows 2 beyond its quota of 2; taking a 2-GPU job back leaves A at its quota, so C cannot take more
    quotas = {"A": 2, "B": 2, "C": 4}
    ev = [S("a1", "A", 2, 0), S("a2", "A", 2, 0), S("b1", "B", 2), S("c0", "C", 2), S("c1", "C", 2)]
    check_close(*both(8, quotas, ev))
    ev = [S("a1", "A", 2, 0), S("a2", "A", 2, 0), S("b1", "B", 2), S("c0", "C", 2), S("c1", "C", 4)]
    check_close(*both(10, quotas, ev))


def test_candidates_recomputed_after_each_victim():
    # A's low-priority jobs go first, but after one of them A is back at its quota: the next victim is B's
    quotas = {"A": 2, "B": 2, "C": 4}
    ev = [S("a1", "A", 2, 0), S("a2", "A", 2, 0), S("b1", "B", 2, 1), S("b2", "B", 2, 1), S("c1", "C", 4, 0)]
    check_close(*both(8, quotas, ev))


def test_one_gpu_cluster():
    check_close(*both(1, {"A": 1}, [S("a1", "A", 1), S("a2", "A", 1), F("a1")]))


def test_not_enough_to_reclaim_preempts_nothing():
    quotas = {"A": 1, "B": 3, "C": 4}
    ev = [S("a1", "A", 2), S("b1", "B", 3), S("c1", "C", 3), S("c2", "C", 1), S("b2", "B", 1)]
    check_close(*both(8, quotas, ev))


def test_preempted_job_restarts_when_room_returns():
    ev = [S("a1", "A", 8), S("b1", "B", 6), F("b1")]
    check_close(*both(8, Q, ev))


def test_restarted_job_has_a_new_start():
    ev = [S("a1", "A", 2), S("a2", "A", 2), S("a3", "A", 4), S("b1", "B", 4), F("b1"), S("b2", "B", 2)]
    check_close(*both(8, Q, ev))


def test_pending_by_priority_then_submit_order():
    ev = [S("b0", "B", 6), S("a0", "A", 2), S("a1", "A", 2, 1), S("a2", "A", 2, 3), S("a3", "A", 2, 1), F("b0")]
    check_close(*both(8, Q, ev))


def test_small_job_skips_a_big_one():
    ev = [S("b0", "B", 6), S("a0", "A", 2), S("a1", "A", 6, 9), S("a2", "A", 1), F("a0")]
    check_close(*both(8, Q, ev))


def test_cancel_pending_job():
    ev = [S("b0", "B", 8), S("a0", "A", 2), F("a0"), F("b0")]
    check_close(*both(8, Q, ev))


def test_spare_gpus_after_preemption_go_to_pending():
    ev = [S("a1", "A", 6), S("a2", "A", 2), S("a3", "A", 1), S("b1", "B", 2)]
    check_close(*both(8, Q, ev))


def test_zero_quota_tenant_only_borrows():
    quotas = {"A": 0, "B": 4}
    ev = [S("a1", "A", 4), S("b1", "B", 1), S("a2", "A", 1), S("b2", "B", 3)]
    check_close(*both(4, quotas, ev))


def test_negative_priorities():
    ev = [S("a1", "A", 4, -1), S("a2", "A", 4, -5), S("b1", "B", 4, -9)]
    check_close(*both(8, Q, ev))


def _stream(rng):
    tenants = {"A": rng.randint(0, 4), "B": rng.randint(0, 4), "C": rng.randint(0, 4)}
    capacity = sum(tenants.values()) + rng.randint(0, 4) or 1
    events, live, n = [], [], 0
    for _ in range(rng.randint(0, 40)):
        if live and rng.random() < 0.35:
            events.append(F(live.pop(rng.randrange(len(live)))))
        else:
            name = f"j{n}"
            n += 1
            events.append(S(name, rng.choice("ABC"), rng.randint(1, capacity), rng.randint(0, 3)))
            live.append(name)
    return capacity, tenants, events


def _invariants(capacity, quotas, events, result):
    gpus = {e["job"]: (e["tenant"], e["gpus"]) for e in events if e["op"] == "submit"}
    if sum(gpus[j][1] for j in result["running"]) > capacity:
        raise RuntimeError("the reference runs more GPUs than the cluster has")


_rng = random.Random(177)
RANDOM = [_stream(_rng) for _ in range(30)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    capacity, quotas, events = RANDOM[index]
    got, expected = both(capacity, quotas, events)
    _invariants(capacity, quotas, events, expected)
    check_close(got, expected)


# Cross-item and cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("events", (8, Q, [S("a1", "A", 1), S("a1", "B", 1)])),
    ("events", (8, Q, [S("a1", "Z", 1)])),
    ("events", (8, Q, [S("a1", "A", 9)])),
    ("events", (8, Q, [F("a1")])),
    ("events", (8, Q, [S("a1", "A", 1), F("a1"), F("a1")])),
    ("quotas", (7, Q, [])),
]


@pytest.mark.parametrize("field,args", BAD, ids=[f"{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, args):
    expect_value_error(call(submission, "schedule"), *args, field=field)
