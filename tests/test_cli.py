"""python -m sim plan / sweep."""

import json
import subprocess
import sys

from sim.cli import main

CHAPTER = ["plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "8", "--dtype", "fp8", "--qps", "200",
           "--input", "2000", "--output", "500", "--ttft", "2", "--tpot", "0.05"]


def test_plan_table_and_chapter_overrides(capsys):
    chapter = CHAPTER + ["--mfu", "0.4", "--step-overhead", "1.5e-3", "--bandwidth-util", "1"]
    assert main(chapter + ["--search", "chapter"]) == 0
    out = capsys.readouterr().out
    assert "16.8 req/s" in out and "12, 16 with 1.3x" in out and "$320/h" in out and "$0.89" in out
    assert main(chapter) == 0                      # the default: steady-state trials (sim.capacity)
    out = capsys.readouterr().out
    assert "15.9 req/s" in out and "13, 17 with 1.3x" in out


def test_plan_json(capsys):
    assert main(CHAPTER + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["gpus"] == d["instances"] * 8 and d["bound"] in {"prefill_compute", "decode_bandwidth",
                                                              "kv_capacity", "max_num_seqs"}


def test_plan_error_exits_2(capsys):
    args = list(CHAPTER)
    args[args.index("h100-sxm")] = "a100"
    assert main(args) == 2
    assert "no FP8" in capsys.readouterr().err


def test_sweep_small_grid_sorted_by_cost(capsys):
    assert main(["sweep", "--model", "llama-3-8b", "--qps", "20", "--input", "500", "--output", "100",
                 "--ttft", "1", "--tpot", "0.05", "--gpus", "h100-sxm", "l40s", "--tps", "1", "2",
                 "--dtypes", "fp8", "--workers", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4
    costs = [r["usd_per_hour"] for r in rows if r["feasible"]]
    assert costs == sorted(costs) and costs


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "sim", "plan", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--qps" in done.stdout


def test_readme_plan_with_ranges_is_what_the_cli_prints():
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    shown = re.search(r"```\n(rate per instance .*?)```", readme, flags=re.S).group(1).strip().splitlines()
    out = subprocess.run([sys.executable, "-m", "sim", "plan", "--model", "llama-3-70b", "--gpu", "h100-sxm",
                          "--tp", "8", "--dtype", "fp8", "--qps", "200", "--input", "2000", "--output", "500",
                          "--ttft", "2", "--tpot", "0.05"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    assert len(shown) == 4 and all(line in printed for line in shown), (shown, printed)
