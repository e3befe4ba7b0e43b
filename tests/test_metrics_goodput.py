"""Goodput: SLO-meeting requests (and their output tokens) per second of the arrival window, so a
run that drains a backlog after its arrivals stop is neither credited nor penalised for the drain.
Hand-made results, timelines worked by hand."""

import math

import numpy as np
import pytest

from sim import presets, run, summarize, workload
from sim.fleet import Fleet, run_fleet, summarize_fleet
from sim.result import SimResult


def hand(arrival, first, finish, outputs):
    return SimResult(arrival, first, finish, [10] * len(arrival), outputs)


def test_goodput_is_per_second_of_arrivals_not_of_the_drain():
    # arrivals over 0..4 s; the last request finishes at 20 s (a long drain).
    r = hand(arrival=[0.0, 1.0, 2.0, 3.0, 4.0], first=[0.1, 1.1, 2.1, 3.1, 9.0],
             finish=[1.0, 2.0, 3.0, 4.0, 20.0], outputs=[10, 10, 10, 10, 10])
    s = summarize(r, ttft_slo=1.0, tpot_slo=1.0)
    assert s["arrival_window_s"] == 4.0 and s["duration_s"] == 20.0
    assert s["goodput"] == pytest.approx(4 / 4.0)             # 4 met their SLOs (the 5th: TTFT 5 s)
    assert s["goodput_tps"] == pytest.approx(40 / 4.0)
    assert s["request_rate"] == pytest.approx(5 / 20.0)        # throughput still counts the drain
    # the same good requests with a faster drain: goodput does not move
    faster = hand(r.arrival, r.first_token, [1.0, 2.0, 3.0, 4.0, 10.0], r.output_len)
    assert summarize(faster, 1.0, 1.0)["goodput"] == s["goodput"]


def test_goodput_counts_only_requests_meeting_both_slos():
    r = hand(arrival=[0.0, 1.0, 2.0], first=[0.1, 1.2, 3.0], finish=[1.0, 3.2, 3.5], outputs=[10, 5, 1])
    s = summarize(r, ttft_slo=0.5, tpot_slo=0.2)               # only the first meets both
    assert s["goodput"] == pytest.approx(1 / 2.0) and s["goodput_tps"] == pytest.approx(10 / 2.0)
    none = summarize(r, None, None)
    assert none["goodput"] == pytest.approx(3 / 2.0) and none["goodput_tps"] == pytest.approx(16 / 2.0)


def test_an_offline_batch_falls_back_to_its_makespan():
    r = hand(arrival=[0.0, 0.0], first=[0.5, 0.5], finish=[2.0, 4.0], outputs=[4, 4])
    s = summarize(r, None, None)
    assert s["arrival_window_s"] == 0.0 and s["goodput"] == pytest.approx(2 / 4.0)
    one = summarize(hand([3.0], [3.5], [5.0], [2]), None, None)
    assert one["goodput"] == pytest.approx(1 / 2.0) and math.isfinite(one["goodput_tps"])


def test_engine_run_goodput_equals_arrival_rate_when_all_meet():
    setup = presets.instance("llama-3-8b", "h100-sxm", tp=1, weight_dtype="bf16", kv_dtype="bf16")
    w = workload.poisson(4.0, 200, 200, 20, seed=3)
    s = summarize(run(setup, w), None, None)
    arrival = np.asarray(w.arrival)
    assert s["goodput"] == pytest.approx(200 / (arrival.max() - arrival.min()))
    assert s["goodput"] > s["request_rate"]                    # the drain after the last arrival


def test_fleet_goodput_uses_the_same_window_and_counts_failures_as_misses():
    from sim.fleet import Failures
    setup = presets.instance("llama-3-8b", "h100-sxm", tp=1, weight_dtype="bf16", kv_dtype="bf16")
    w = workload.poisson(8.0, 160, 200, 20, seed=1)
    fleet = Fleet.of(setup, 2, router="round_robin", failures=Failures(at=((5.0, 0),), detect_s=1.0, retries=0))
    res = run_fleet(fleet, w)
    s = summarize_fleet(res, None, None)
    window = float(np.ptp(res.arrival))
    finished = int((~res.failed).sum())
    assert res.failed.any() and s["goodput"] == pytest.approx(finished / window)
    assert s["goodput_tps"] == pytest.approx(float(res.output_len[~res.failed].sum()) / window)
