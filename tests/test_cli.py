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
    assert "16.1 req/s" in out and "13, 17 with 1.3x" in out


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


# --- one way to take an instance and to name it -----------------------------------------------

SMALL = ["--model", "llama3-8b", "--gpu", "h100", "--dtype", "fp8", "--qps", "20", "--input", "500",
         "--output", "100", "--ttft", "1", "--tpot", "0.05"]
FACTORS = ["--mfu", "0.4", "--step-overhead", "1.5e-3", "--bandwidth-util", "1"]


def test_plan_and_fleet_build_the_same_setup_from_the_same_flags():
    from sim import presets
    from sim.cli import _parser, setup_from_args
    plan_args = _parser().parse_args(["plan"] + SMALL + FACTORS + ["--kv-dtype", "bf16", "--mem-util", "0.8"])
    fleet_args = _parser().parse_args(["fleet"] + SMALL + FACTORS + ["--kv-dtype", "bf16", "--mem-util", "0.8"])
    expected = presets.instance("llama-3-8b", "h100-sxm", tp=1, weight_dtype="fp8", kv_dtype="bf16",
                                mem_util=0.8, mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)
    assert setup_from_args(plan_args) == setup_from_args(fleet_args) == expected
    calibrated = _parser().parse_args(["plan"] + SMALL)
    assert setup_from_args(calibrated) == presets.instance("llama-3-8b", "h100-sxm", weight_dtype="fp8")


def test_sweep_takes_the_same_instance_flags_and_gives_plans_figures(capsys):
    assert main(["plan"] + SMALL + FACTORS + ["--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert main(["sweep"] + [a for a in SMALL if a not in ("--gpu", "h100", "--dtype", "fp8")] + FACTORS
                + ["--gpus", "h100", "--tps", "1", "--dtypes", "fp8", "--workers", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["gpu"] == planned["gpu"] == "h100-sxm" and row["mfu"] == 0.4
    assert row["rate_per_instance"] == planned["rate_per_instance"]
    assert row["usd_per_hour"] == planned["usd_per_hour"] and planned["gpu_hour_usd"] == 2.5


def test_every_command_names_the_instance_by_its_display_names(capsys):
    from sim import presets
    line = presets.describe("llama-3-8b", "h100-sxm", 1, "fp8")
    assert line == "Llama-3-8B on 1 x H100 SXM, weights FP8 / KV FP8"
    assert main(["plan"] + SMALL + FACTORS) == 0
    plan_out = capsys.readouterr().out
    assert main(["fleet"] + SMALL + FACTORS + ["--duration", "5"]) == 0
    fleet_out = capsys.readouterr().out
    assert main(["sweep"] + SMALL[:2] + SMALL[6:] + ["--gpus", "h100", "--tps", "1", "--dtypes", "fp8",
                                                     "--workers", "1"]) == 0
    sweep_out = capsys.readouterr().out
    assert plan_out.splitlines()[0] == line and fleet_out.splitlines()[0].startswith(line + ", router")
    assert sweep_out.startswith("Llama-3-8B: 1 options") and "\nH100 SXM " in sweep_out
    for out in (plan_out, fleet_out, sweep_out):
        assert "llama3-8b" not in out and "h100-sxm" not in out and " h100 " not in out


def test_json_names_presets_by_their_keys_the_same_in_plan_and_fleet(capsys):
    assert main(["plan"] + SMALL + FACTORS + ["--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert main(["fleet"] + SMALL + FACTORS + ["--duration", "5", "--json"]) == 0
    fleet = json.loads(capsys.readouterr().out)
    names = ("model", "gpu", "tp", "dtype", "kv_dtype", "instance")
    assert {k: planned[k] for k in names} == {k: fleet[k] for k in names} == {
        "model": "llama-3-8b", "gpu": "h100-sxm", "tp": 1, "dtype": "fp8", "kv_dtype": "fp8",
        "instance": "Llama-3-8B on 1 x H100 SXM, weights FP8 / KV FP8"}
    assert fleet["rate_per_instance"] == planned["rate_per_instance"]      # the fleet quotes plan's rate


def test_a_gpu_without_a_price_asks_for_one(capsys):
    args = ["plan", "--model", "llama-3-8b", "--gpu", "gh200", "--qps", "20", "--input", "500", "--output", "100",
            "--ttft", "1", "--tpot", "0.05"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no price for GPU" in err and "--gpu-hour-usd" in err and "Traceback" not in err
    assert main(args + ["--gpu-hour-usd", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_hour_usd"] == 3.0
    sweep = ["sweep"] + args[1:3] + args[5:] + ["--gpus", "gh200", "--tps", "1", "--dtypes", "fp8", "--workers", "1"]
    assert main(sweep + ["--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert not row["feasible"] and "--gpu-hour-usd" in row["reason"]
    assert main(sweep + ["--json", "--gpu-hour-usd", "GH200=3"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["feasible"] and row["usd_per_hour"] == 3.0 * row["gpus"]
    assert main(sweep + ["--gpu-hour-usd", "gh200"]) == 2
    assert "GPU=USD" in capsys.readouterr().err


def test_no_module_resolves_names_through_the_presets_private_helper():
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    users = []
    for path in [*root.glob("sim/**/*.py"), *root.glob("course/*.py")]:
        if path.parent.name == "presets":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "_resolve":
                users.append(str(path.relative_to(root)))
    assert users == []


def test_engine_flag_sets_the_admission_policy(capsys):
    import pytest
    args = ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--dtype", "fp8", "--qps", "10", "--input", "500",
            "--output", "100", "--ttft", "2", "--tpot", "0.05", "--json"]
    assert main(args + ["--engine", "trtllm"]) == 0
    reserve = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == reserve          # TensorRT-LLM's admission is the default's
    with pytest.raises(SystemExit):
        main(args + ["--engine", "tgi"])
    assert "invalid choice: 'tgi'" in capsys.readouterr().err
