"""The validation table (tests/validation/) and a reduced run of benchmarks/bench_validation.py."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_validation", ROOT / "benchmarks" / "bench_validation.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

RESULT = re.compile(r"^https://github\.com/mlcommons/inference_results_(v4\.[01])/blob/[0-9a-f]{40}/closed/NVIDIA/"
                    r"results/([^/]+)/llama2-70b-(99|99\.9)/(Offline|Server)/performance/run_1/mlperf_log_summary\.txt$")
CONFIG = re.compile(r"^https://github\.com/mlcommons/inference_results_(v4\.[01])/blob/[0-9a-f]{40}/closed/NVIDIA/"
                    r"configs/llama2-70b/(Offline|Server)/__init__\.py$")


def test_every_row_names_the_log_it_was_read_from():
    table = bench.rows()
    assert len(table) == 8
    for row in table:
        m = RESULT.match(row["source"])
        assert m, row["source"]
        assert m.groups() == (row["round"], row["system"], row["accuracy_target"], row["scenario"].capitalize())
        c = CONFIG.match(row["config_source"])
        assert c and c.groups() == (row["round"], row["scenario"].capitalize()), row["config_source"]
        assert int(row["num_gpus"]) % int(row["tp"]) == 0 and row["weight_dtype"] == "fp8"
        # LoadGen counts output tokens: about the reference's 294.45 tokens per sample.
        assert bench.output_mean(row) == pytest.approx(294.45, rel=0.02)
        if row["scenario"] == "server":
            assert 0 < float(row["published_mean_tpot_s"]) < bench.TPOT_P99_S and not row["samples_per_query"]
        else:
            assert int(row["samples_per_query"]) >= 24576      # at least one pass over the dataset


def test_mean_absolute_error():
    assert bench.mean_abs_error([100, 200], [110, 150]) == pytest.approx((0.1 + 0.25) / 2)
    with pytest.raises(ValueError):
        bench.mean_abs_error([100], [1, 2])


def test_capped_lengths_keep_the_asked_mean():
    for mean, cv, high in ((500, 0.7, 1023), (292, 1.0, 1024)):
        assert bench.with_mean(mean, cv, high).mean == pytest.approx(mean, abs=0.1)


def test_prompt_mean_derived_from_the_server_logs_agrees_across_rows():
    mean, per_row = bench.derive_input_mean(bench.rows())
    assert len(per_row) == 4 and 400 <= mean <= 600
    assert all(abs(x / mean - 1) < 0.2 for x in per_row)


def test_reduced_validation_is_within_tolerance():
    """Fewer requests than the benchmark (offline: 4,000 per instance; server: 600 s) so it runs in
    seconds; every row within 25 % and the mean absolute error under 15 %."""
    table = bench.rows()
    mean, _ = bench.derive_input_mean(table)
    results = bench.validate(table, mean, offline_requests=4000, duration_s=600)
    errors = [p / q - 1 for _, q, p in results]
    assert all(abs(e) <= 0.25 for e in errors), errors
    assert bench.mean_abs_error([r[1] for r in results], [r[2] for r in results]) < 0.15


def test_serial_kv_read_matches_the_measured_decode_steps():
    """The presets' factors and KV_SERIAL against 8 Llama-70B-shaped BF16 layers on one H200
    (tests/validation/h200_decode_steps.json): each step's time from Setup.step_time."""
    import json

    from sim import Setup, presets
    steps = json.loads((ROOT / "tests" / "validation" / "h200_decode_steps.json").read_text())
    w = steps["weight_bytes"]
    kv_per_token = 2 * 8 * 128 * 2 * steps["layers"]             # K and V, 8 KV heads, BF16, per layer

    def errors(serial):
        s = Setup(params=w / 2, weight_bytes=w, kv_bytes_per_token=kv_per_token, kv_capacity_tokens=10**7,
                  peak_flops=presets.GPUS["h200"].bf16_flops, bandwidth=4.8e12 * presets.BANDWIDTH_UTIL,
                  mfu=presets.MFU, step_overhead=0.0, kv_serial=serial)
        return [s.step_time(d["batch"], d["batch"] * d["ctx"]) / d["graph_s"] - 1 for d in steps["decode"]]

    serial, overlapped = errors(presets.KV_SERIAL), errors(0.0)
    assert len(serial) == 7 and max(abs(e) for e in serial) < 0.13
    assert sum(abs(e) for e in serial) / 7 < 0.08 < sum(abs(e) for e in overlapped) / 7
