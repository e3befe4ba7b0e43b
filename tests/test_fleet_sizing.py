"""Fleet sizing: the chosen fleets are verified by simulation; ``python -m sim fleet`` (sim.cli) prints both."""

import json

from sim.cli import main
from sim.fleet import Fleet, run_fleet
from sim.fleet.sizing import size_fleet
from sim.metrics import meets_slos
from sim.workload import poisson


def test_size_fleet_verifies_what_it_returns(chapter_like):
    ticks = []
    plan = size_fleet(40, chapter_like, 1000, 100, 1.0, 0.03, duration_s=20,
                      progress=lambda done, total: ticks.append((done, total)))
    co, pd = plan.colocated, plan.disaggregated
    assert ticks == [(k, None) for k in range(1, co.simulations + pd.simulations + 1)]   # one per fleet
    assert co is not None and pd is not None and plan.best is not None
    load = poisson(40, 800, 1000, 100)
    res = run_fleet(Fleet.of(chapter_like, co.instances, router="least_requests"), load)
    assert meets_slos(res, 1.0, 0.03).mean() >= 0.99
    assert co.slo_ok >= 0.99 and pd.slo_ok >= 0.99
    assert pd.prefill + pd.decode == pd.instances


def test_cli_fleet_json(capsys):
    code = main(["fleet", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--qps", "20", "--input", "1000",
                 "--output", "100", "--ttft", "1", "--tpot", "0.05", "--duration", "15", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["colocated"]["instances"] >= 1 and out["best"] in ("colocated", "disaggregated")


def test_the_fleets_instance_rate_is_sim_plans(chapter_like):
    from sim import plan
    from sim.fleet.sizing import single_instance_rate
    p = plan(40, chapter_like, 1000, 100, 1.0, 0.03, gpus_per_instance=1)
    assert single_instance_rate(chapter_like, 1000, 100, 1.0, 0.03) == p.rate_per_instance
    assert single_instance_rate(chapter_like, 1000, 100, 1e-4, 0.03) == 0.0      # a lone request misses


def small_instance():
    from sim import Setup
    return Setup(params=8e9, weight_bytes=16e9, kv_bytes_per_token=131072, kv_capacity_tokens=200_000,
                 peak_flops=989e12, bandwidth=3.35e12, mfu=0.5, step_overhead=1e-3,
                 max_num_batched_tokens=2048, max_num_seqs=8)


def test_keeps_up_rejects_a_fleet_one_instance_short_by_its_drift():
    # Evenly spaced arrivals at 27.3 req/s (200 in, 100 out), 100 s: two instances (8 sequences
    # each) serve about 27 req/s, so they complete 97.5% of the second half's arrivals (above
    # KEEP_UP: the count alone would pass them) while the median wait grows from ~1.5 s in the
    # second quarter to ~2.7 s in the last: rejected. Three instances keep a flat ~0.6 s.
    import numpy as np
    from sim.fleet.sizing import DRIFT, DRIFT_S, KEEP_UP, keeps_up
    from sim.workload import uniform
    load = uniform(27.3, 2730, 200, 100)
    short = run_fleet(Fleet.of(small_instance(), 2, router="least_requests"), load)
    enough = run_fleet(Fleet.of(small_instance(), 3, router="least_requests"), load)
    a, end = short.arrival, short.arrival[-1]
    completed = ((short.finish >= end / 2) & (short.finish <= end)).sum() / (a >= end / 2).sum()
    assert completed >= KEEP_UP
    wait = short.finish - a
    assert np.median(wait[a >= 3 * end / 4]) > DRIFT * np.median(wait[(a >= end / 4) & (a < end / 2)]) + DRIFT_S
    assert not keeps_up(short.finish, short.arrival)
    assert keeps_up(enough.finish, enough.arrival)


def test_the_chosen_pd_fleet_holds_over_a_window_five_times_longer():
    from sim.fleet.sizing import keeps_up
    setup = small_instance().replace(max_num_seqs=64)
    plan = size_fleet(60, setup, 1000, 100, 1.0, 0.02, duration_s=10)
    pd = plan.disaggregated
    load = poisson(60, 5 * 600, 1000, 100)                 # the sizing window's arrivals, then 4x more
    res = run_fleet(Fleet.pd(setup, pd.prefill, setup, pd.decode, router="least_requests"), load)
    assert meets_slos(res, 1.0, 0.02).mean() >= 0.99
    assert keeps_up(res.finish, res.arrival) and keeps_up(res.first_token, res.arrival)
