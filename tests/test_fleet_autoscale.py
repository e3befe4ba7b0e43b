"""Autoscaling: cold starts from a named weight source, scale-up under a load step, drain before
removal, GPU-hours and SLO attainment per window."""

import math

import numpy as np
import pytest

from conftest import TICK, ticks, tiny_setup
from sim.fleet import Autoscaler, Fleet, cold_start_s, run_fleet, summarize_fleet
from sim.fleet.load import daily, piecewise
from sim.workload import Workload


def test_cold_start_is_weight_load_time():
    assert cold_start_s(70.6e9, "local_nvme") == pytest.approx(70.6e9 / 7e9)
    assert cold_start_s(70.6e9, "network_storage", init_s=30) == pytest.approx(70.6 / 1.25 + 30)
    assert cold_start_s(70.6e9, "peer_gpu") == pytest.approx(70.6 / 50)
    with pytest.raises(ValueError, match="weight source"):
        cold_start_s(1e9, "floppy")


def test_scale_up_drain_and_remove_event_by_event():
    # tiny instance, weight_bytes 2: cold start from NVMe = 2 / 7e9 s (+ init 3 ticks).
    # Every 4 ticks the autoscaler targets 1 outstanding request per instance.
    # Requests (prompt 2, output 9) at 0, 0, 0 on one instance: at the tick at 4 ticks, 3 are
    # outstanding -> 3 instances: 2 start, ready after the cold start (7 ticks and 0.3 ns). r3 at
    # 5 ticks still finds one instance up; r4 at 9 goes to the emptiest, new instance 1. The tick
    # at 8 asks for 4 (capped at 3): no change; ticks stop after the last arrival.
    a = Autoscaler(policy="outstanding", target=1, interval_s=4 * TICK, min_instances=1, max_instances=3,
                   init_s=3 * TICK)
    w = Workload("test", (0.0, 0.0, 0.0, 5 * TICK, 9 * TICK), (2,) * 5, (9, 9, 9, 2, 2))
    res = run_fleet(Fleet.of(tiny_setup(), 1, router="least_requests", autoscaler=a), w)
    kinds = [(k, wid) for _, k, _, wid, _ in res.events if k != "route"]
    assert kinds == [("scale_up", 1), ("scale_up", 2), ("ready", 1), ("ready", 2)]
    ready = 4 * TICK + 2 / 7e9 + 3 * TICK
    assert res.workers[1].ready_s == ready
    assert res.instance.tolist() == [0, 0, 0, 0, 1]
    assert res.timeline[:3] == [(0.0, 1, 0), (4 * TICK, 1, 2), (ready, 2, 1)]
    assert res.gpu_hours == pytest.approx(sum(w.stopped_s - w.started_s for w in res.workers) / 3600)


def test_piecewise_load_scales_out_and_back(chapter_like):
    load = piecewise([(0, 5), (60, 40), (120, 5)], 240, 500, 100, seed=1)
    a = Autoscaler(policy="outstanding", target=8, interval_s=10, min_instances=1, max_instances=8,
                   weight_source="peer_gpu")
    res = run_fleet(Fleet.of(chapter_like, 1, router="least_requests", autoscaler=a), load)
    ups = [up for _, up, _ in res.timeline]
    assert max(ups) >= 3 and ups[-1] < max(ups)
    assert any(k == "drain" for _, k, *_ in res.events) and any(k == "remove" for _, k, *_ in res.events)
    assert not res.failed.any()
    s = summarize_fleet(res, 2.0, 0.1, window_s=60)
    assert len(s["slo_by_window"]) == 4
    assert s["gpu_hours"] < 8 * 240 / 3600                   # cheaper than 8 instances all along
    # a drained instance finished everything it had before it was removed
    for wr in res.workers:
        if wr.state == "removed" and not math.isnan(wr.ready_s):
            mine = res.finish[res.instance == wr.id]
            assert (mine <= wr.stopped_s).all()


def test_queue_time_policy_and_daily_curve(chapter_like):
    load = daily(10, 600, 300, 50, peak_to_trough=4, period_s=600, peak_at_s=300, seed=2)
    rate_first, rate_mid = (np.sum(np.asarray(load.arrival) < 100), np.sum(np.abs(np.asarray(load.arrival) - 300) < 50))
    assert rate_mid > 2 * rate_first
    a = Autoscaler(policy="queue_time", target=0.05, interval_s=5, min_instances=1, max_instances=6)
    res = run_fleet(Fleet.of(chapter_like, 1, router="least_requests", autoscaler=a), load)
    assert not res.failed.any() and len(res) == len(load)


def test_bad_autoscaler_names_the_field(chapter_like):
    with pytest.raises(ValueError, match="autoscaler.policy"):
        Autoscaler(policy="magic")
    with pytest.raises(ValueError, match="autoscaler.max_instances"):
        Autoscaler(min_instances=4, max_instances=2)
    with pytest.raises(ValueError, match="autoscaler.interval_s"):
        Autoscaler(interval_s=0)
    with pytest.raises(ValueError, match="within the autoscaler"):
        Fleet.of(chapter_like, 10, autoscaler=Autoscaler(max_instances=4))


def test_a_policy_object_is_fresh_in_every_run():
    """State a policy keeps (here a call counter) never carries over from one run to the next."""
    from sim.fleet.autoscale import Autoscaler

    class Counting:
        def __init__(self):
            self.calls = 0

        def desired(self, *args, **kwargs):
            self.calls += 1
            return 1

    policy = Counting()
    scaler = Autoscaler(policy=policy)
    first, second = scaler.make_policy(), scaler.make_policy()
    first.calls += 5
    assert second.calls == 0 and policy.calls == 0 and first is not policy
