"""Fleet-wide properties: one instance is the single-instance engine, runs are deterministic by
seed, Little's law holds, and bad input names its field."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import tiny_setup
from sim import run, summarize, workload
from sim.fleet import ROUTERS, Fleet, run_fleet, summarize_fleet
from sim.workload import Workload
from test_engine_vs_reference import setup_and_lengths


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), router=st.sampled_from(sorted(ROUTERS)))
def test_a_fleet_of_one_is_the_single_instance_engine(data, router):
    setup, n, inputs, outputs = data.draw(setup_and_lengths(120))
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1e-5, 1e-3, 0.05, 1.0, 30.0]), min_size=n, max_size=n))
    w = Workload("test", tuple(np.cumsum(gaps).tolist()), tuple(inputs), tuple(outputs))
    one = run(setup, w)
    res = run_fleet(Fleet.of(setup, 1, router=router, seed=data.draw(st.integers(0, 9))), w)
    assert np.array_equal(res.arrival, one.arrival)
    assert np.array_equal(res.first_token, one.first_token)
    assert np.array_equal(res.finish, one.finish)
    assert np.array_equal(res.steps.duration, one.steps.duration)
    assert np.array_equal(res.steps.start, one.steps.start)


def test_a_fleet_of_one_on_the_chapter_workload():
    from sim import presets
    setup = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    w = workload.poisson(16, 1500, 2000, 500)
    assert np.array_equal(run_fleet(Fleet.of(setup, 1, router="least_requests"), w).finish, run(setup, w).finish)


def test_deterministic_by_seed(chapter_like):
    w = workload.poisson(40, 300, 500, 50, seed=3)
    def go(seed):
        return run_fleet(Fleet.of(chapter_like, 3, router="power_of_two", seed=seed), w)
    a, b, c = go(1), go(1), go(2)
    assert np.array_equal(a.finish, b.finish) and a.events == b.events
    assert not np.array_equal(a.instance, c.instance)


def test_littles_law_on_a_fleet(chapter_like):
    # L (mean requests in the fleet, sampled on a fine grid) = lambda (arrival rate) x W (mean e2e)
    w = workload.poisson(30, 3000, 800, 100, seed=5)
    res = run_fleet(Fleet.of(chapter_like, 3, router="least_requests"), w)
    end = float(res.finish.max())
    grid = np.linspace(0, end, 20001)
    in_system = (np.searchsorted(np.sort(res.arrival), grid, side="right")
                 - np.searchsorted(np.sort(res.finish), grid, side="right"))
    L = in_system.mean()
    lam, W = len(res) / end, float(res.e2e.mean())
    assert L == pytest.approx(lam * W, rel=0.02)


def test_summarize_takes_no_slo(chapter_like):
    res = run_fleet(Fleet.of(chapter_like, 2), workload.poisson(10, 50, 200, 20))
    for none in (None, math.inf):
        s = summarize(res, ttft_slo=none, tpot_slo=none)
        assert s["slo_ok"] == 1.0 and s["goodput"] == pytest.approx(len(res) / np.ptp(res.arrival))
    s = summarize_fleet(res, window_s=1.0)
    assert sum(n for _, n, _ in s["slo_by_window"]) == 50


def test_bad_input_names_the_field(chapter_like):
    w = workload.poisson(10, 5, 200, 20)
    with pytest.raises(ValueError, match="router must be one of"):
        run_fleet(Fleet.of(chapter_like, 2, router="nope"), w)
    with pytest.raises(ValueError, match="Pool.instances"):
        Fleet.of(chapter_like, 0)
    with pytest.raises(ValueError, match="pool is empty"):
        Fleet()
    with pytest.raises(ValueError, match="link_gbs"):
        Fleet.pd(chapter_like, 1, chapter_like, 1, link_gbs=0.0)
    with pytest.raises(ValueError, match="workload"):
        run_fleet(Fleet.of(chapter_like, 2), workload.closed_loop(2, 5, 200, 20))
    with pytest.raises(ValueError, match="sessions"):
        run_fleet(Fleet.of(chapter_like, 2), w, sessions=[1, 2])
    with pytest.raises(ValueError, match="kv_capacity_tokens"):
        run_fleet(Fleet.of(tiny_setup(cap=10), 2), w)
