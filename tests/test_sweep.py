"""sim.sweep: local processes and a Ray cluster give the same rows; bad executor arguments."""

import json
import os
import sys

import pytest

from sim.cli import main
from sim.sweep import sweep

GRID = {"gpu": ["h100-sxm", "l40s", "a100-80gb"], "tp": [1, 2], "weight_dtype": ["fp8", "bf16"]}
ARGS = ("llama-3-8b", 20, 500, 100, 1.0, 0.05)
CLI = ["sweep", "--model", "llama-3-8b", "--qps", "20", "--input", "500", "--output", "100", "--ttft", "1",
       "--tpot", "0.05", "--gpus", "h100-sxm", "l40s", "--tps", "1", "2", "--dtypes", "fp8", "--json"]


@pytest.fixture(scope="module")
def local_rows():
    return sweep(*ARGS, grid=GRID, num_requests=300, workers=2)      # 12 options: a process pool


@pytest.fixture(scope="module")
def ray_runtime():
    try:
        import ray
    except ImportError:
        pytest.skip("Ray is not installed (pip install '.[ray]'; make test installs it)")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    yield ray
    ray.shutdown()


def test_local_grid_has_feasible_and_infeasible_rows(local_rows):
    assert len(local_rows) == 12
    feasible = [r for r in local_rows if r.feasible]
    assert 0 < len(feasible) < 12
    assert all("FP8" in r.reason for r in local_rows if not r.feasible)   # A100 has no FP8


def test_ray_gives_the_same_rows_as_local_processes(ray_runtime, local_rows):
    rows = sweep(*ARGS, grid=GRID, num_requests=300, executor="ray")
    assert [r.as_dict() for r in rows] == [r.as_dict() for r in local_rows]


def test_cli_ray_executor_prints_the_local_json(ray_runtime, capsys):
    assert main(CLI + ["--workers", "1"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(CLI + ["--executor", "ray"]) == 0
    assert json.loads(capsys.readouterr().out) == local and len(local) == 4


@pytest.mark.parametrize("kwargs, field", [
    ({"executor": "dask"}, "executor"),
    ({"address": "auto"}, "address"),
    ({"executor": "ray", "workers": 2}, "workers"),
    ({"workers": 0}, "workers"),
])
def test_bad_executor_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        sweep(*ARGS, grid={"gpu": ["h100-sxm"], "tp": [1]}, **kwargs)


def test_ray_missing_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)        # `import ray` now raises ImportError
    assert main(CLI + ["--executor", "ray"]) == 2
    err = capsys.readouterr().err
    assert "needs Ray" in err and "pip install" in err


def test_sweep_plan_cli_and_panel_give_the_same_figures_for_one_option(capsys):
    """One answer per question: the same option through sweep, plan, `python -m sim plan` and the
    chapter-02 panel gives the same rate, GPUs, cost and bound (they share one search)."""
    from course import panel
    from sim import plan, presets

    factors = dict(mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)
    grid = {"gpu": ["h200"], "tp": [8], "weight_dtype": ["fp8"], "kv_dtype": ["fp8"],
            **{k: [v] for k, v in factors.items()}}
    (row,) = sweep("llama-3-70b", 200, 2000, 500, 2.0, 0.05, grid=grid, workers=1, gpu_hour_usd={"h200": 2.5})
    setup = presets.instance("llama-3-70b", "h200", tp=8, weight_dtype="fp8", kv_dtype="fp8", **factors)
    p = plan(200, setup, 2000, 500, 2.0, 0.05, gpus_per_instance=8, gpu_hour_usd=2.5)
    assert main(["plan", "--model", "llama-3-70b", "--gpu", "h200", "--tp", "8", "--dtype", "fp8",
                 "--kv-dtype", "fp8", "--mfu", "0.4", "--step-overhead", "1.5e-3", "--bandwidth-util", "1.0",
                 "--gpu-hour-usd", "2.5", "--qps", "200", "--input", "2000", "--output", "500",
                 "--ttft", "2", "--tpot", "0.05", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    d = panel.design(200, 2000, 500, 0.4, 2.5, panel.Hardware("llama-3-70b", "h200", 8, "fp8", "fp8"))
    figures = {(r, g, c, b) for r, g, c, b in [
        (row.rate_per_instance, row.gpus, row.usd_per_hour, row.bound),
        (p.rate_per_instance, p.gpus, p.usd_per_hour, p.bound),
        (cli["rate_per_instance"], cli["gpus"], cli["usd_per_hour"], cli["bound"]),
        (d.rate_per_instance, d.gpus, d.usd_per_hour, d.bound)]}
    assert len(figures) == 1, figures
