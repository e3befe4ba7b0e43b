"""Fleet sizing: the chosen fleets are verified by simulation; the CLI prints both side by side."""

import json

from sim.cli import main
from sim.fleet import Fleet, run_fleet
from sim.fleet.sizing import size_fleet
from sim.metrics import meets_slos
from sim.workload import poisson


def test_size_fleet_verifies_what_it_returns(chapter_like):
    plan = size_fleet(40, chapter_like, 1000, 100, 1.0, 0.03, duration_s=20)
    co, pd = plan.colocated, plan.disaggregated
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
