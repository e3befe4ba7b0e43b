"""Failures: detection delay, retries elsewhere, and conservation (nothing disappears)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from sim import summarize, workload
from sim.fleet import Autoscaler, Failures, Fleet, run_fleet, summarize_fleet
from sim.workload import Workload

# r0 (2, 3) at 0, r1 (2, 3) at 1 tick, r2 (2, 3) at 4 ticks; round robin over 2 instances.
W = Workload("test", (0.0, TICK, 4 * TICK), (2, 2, 2), (3, 3, 3))


def fleet(retries):
    return Fleet.of(tiny_setup(), 2, router="round_robin",
                    failures=Failures(at=[(3 * TICK, 0)], detect_s=2 * TICK, retries=retries))


def test_failure_with_retry_event_by_event():
    # i0 runs r0 (0 -> 2 first token, 2 -> 4 token 2) and fails at 3: r0 is lost mid-step.
    # r2 at 4 goes to i0 (round robin; the gateway does not know yet): lost too.
    # At 5 the health check notices: r0 and r2 are routed again, both to i1, arriving at 5.
    # i1: r1 1 -> 3 first, 3 -> 5 token 2; at 5: r1 decodes (1) + r0's prompt (2) + 1 token of
    # r2's (budget 4): 4 ticks -> 9: r1 done, r0 first; 9 -> 11: r0 token 2, r2's last prompt
    # token (first token at 11); 11 -> 13: r0 done, r2 token 2; 13 -> 15: r2 done.
    res = run_fleet(fleet(1), W)
    assert [(ticks([t])[0], kind, g, w, x) for t, kind, g, w, x in res.events] == [
        (0, "route", 0, 0, None), (1, "route", 1, 1, None), (3, "fail", -1, 0, "up"),
        (4, "route", 2, 0, None), (5, "detect", -1, 0, 2),
        (5, "retry", 0, -1, 1), (5, "route", 0, 1, None), (5, "retry", 2, -1, 1), (5, "route", 2, 1, None)]
    assert ticks(res.first_token) == [9, 3, 11]
    assert ticks(res.finish) == [13, 9, 15]
    assert ticks(res.ttft) == [9, 2, 7]                  # from the original arrival
    assert res.retries.tolist() == [1, 0, 1]
    assert res.instance.tolist() == [1, 1, 1]
    assert not res.failed.any()
    w0 = res.workers[0]
    assert w0.state == "failed" and ticks([w0.failed_s, w0.stopped_s]) == [3, 3]


def test_without_retries_lost_requests_fail_with_a_reason():
    res = run_fleet(fleet(0), W)
    assert res.error.tolist() == ["instance_failed", None, "instance_failed"]
    assert np.isnan(res.finish[[0, 2]]).all()
    s = summarize(res, 1.0, 1.0)
    assert s["failed"] == 2 and s["requests"] == 1 and s["slo_ok"] == pytest.approx(1 / 3)
    assert summarize_fleet(res)["errors"] == {"instance_failed": 2}


def test_nothing_to_route_to():
    f = Fleet.of(tiny_setup(), 1, failures=Failures(at=[(0.5 * TICK, 0)], detect_s=TICK, retries=3))
    res = run_fleet(f, W)
    assert res.error.tolist() == ["no_instance"] * 3


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 4), pd=st.booleans(), mtbf=st.floats(0.05, 5), retries=st.integers(0, 2),
       detect=st.sampled_from([0.0, 0.01, 0.3]), seed=st.integers(0, 50), rate=st.floats(20, 400),
       router=st.sampled_from(["round_robin", "least_requests", "power_of_two", "least_kv"]))
def test_conservation_every_request_finishes_or_fails_with_a_reason(n, pd, mtbf, retries, detect, seed,
                                                                     rate, router, chapter_like):
    w = workload.poisson(rate, 120, 300, 40, seed=seed)
    failures = Failures(mtbf_s=mtbf, seed=seed, detect_s=detect, retries=retries)
    if pd:
        f = Fleet.pd(chapter_like, n, chapter_like, n, router=router, failures=failures, seed=seed)
    else:
        f = Fleet.of(chapter_like, 2 * n, router=router, failures=failures, seed=seed)
    res = run_fleet(f, w)
    finished = ~np.isnan(res.finish)
    assert (finished ^ res.failed).all()                 # exactly one of the two
    assert set(res.error[res.failed].tolist()) <= {"instance_failed", "no_instance"}
    assert (res.instance[finished] >= 0).all() and (res.first_token[finished] >= res.arrival[finished]).all()
    assert (res.retries <= retries).all()
    # every routing attempt (arrival or retry) was either sent somewhere or failed for want of an instance
    routed = sum(e[1] == "route" for e in res.events)
    nowhere = sum(e[1] == "error" and e[4] == "no_instance" for e in res.events)
    assert routed + nowhere == len(w) + int(res.retries.sum())


def test_failure_of_an_instance_that_does_not_exist():
    with pytest.raises(ValueError, match="failures.at: instance 5 does not exist"):
        Fleet.of(tiny_setup(), 2, failures=Failures(at=[(1.0, 5)]))
    with pytest.raises(ValueError, match="failures.detect_s"):
        Failures(detect_s=-1)


def test_a_dead_instance_answers_nothing_after_its_failure():
    # least_requests over 2; r0 (2, 1) at 0 -> i0, whose step 0 -> 2 would finish it; i0 fails at 1.
    # r1 at 3: the gateway still counts r0 outstanding on i0 (no answer came), so r1 -> i1
    # (prompt 3 -> 5, finished). Detection at 11 retries r0 on i1: 11 -> 13.
    # (Reading i0 "as of now" showed r0 answered at 2, and sent r1 to the dead instance too.)
    w = Workload("test", (0.0, 3 * TICK), (2, 2), (1, 1))
    f = Fleet.of(tiny_setup(), 2, router="least_requests", failures=Failures(at=[(TICK, 0)], detect_s=10 * TICK))
    res = run_fleet(f, w)
    assert [(ticks([t])[0], kind, g, wid) for t, kind, g, wid, _ in res.events if kind == "route"] == [
        (0, "route", 0, 0), (3, "route", 1, 1), (11, "route", 0, 1)]
    assert ticks(res.finish) == [13, 5] and res.retries.tolist() == [1, 0]


def test_requests_sent_to_a_dead_instance_count_as_outstanding():
    # i0 fails idle at 1 tick. r0 at 2: both show 0 outstanding -> i0 (lowest id), lost there.
    # r1 at 3: i0 holds r0 unanswered -> i1 (3 -> 5). Detection at 11: r0 retried on i1, 11 -> 13.
    # (Not counting r0 sent i1's share to the dead instance as well.)
    w = Workload("test", (2 * TICK, 3 * TICK), (2, 2), (1, 1))
    f = Fleet.of(tiny_setup(), 2, router="least_requests", failures=Failures(at=[(TICK, 0)], detect_s=10 * TICK))
    res = run_fleet(f, w)
    assert res.instance.tolist() == [1, 1] and ticks(res.finish) == [13, 5] and res.retries.tolist() == [1, 0]
