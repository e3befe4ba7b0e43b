"""The validation set (tests/validation/): the files' form, and the reported figures computed from them.

The figures come from ``benchmarks/bench_validation.py --write`` (report.json, the README's table,
sim/presets/residuals.py). These tests check that they follow from the rows and the predictions, and
re-simulate a sample of rows to check that the stored predictions are the simulator's own.
"""

import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("bench_validation", ROOT / "benchmarks" / "bench_validation.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
F = bench.F

ROWS = F.load_rows()
SOURCES = F.load_sources()
DATASETS = F.load_datasets()
REPORT = json.loads(bench.REPORT.read_text())


def test_rows_are_well_formed_and_cite_their_sources():
    assert F.problems(ROWS, SOURCES, DATASETS) == []
    assert len(ROWS) >= 60
    for r in ROWS:
        assert r.source in SOURCES and SOURCES[r.source]["url"].startswith("https://")
        assert r.value > 0 and r.num_gpus % (r.tp * r.pp) == 0 and r.assumptions


def test_coverage_asked_for():
    simulated = [r for r in ROWS if r.id in REPORT["predicted"]]
    assert {1, 2, 4, 8} <= {r.tp for r in simulated}
    assert len({r.gpu for r in simulated}) >= 3
    models = {r.model for r in simulated}
    assert {"llama-3.1-8b", "mixtral-8x7b"} <= models and models & {"llama-2-70b", "llama-3.1-70b"}
    metrics = {r.metric for r in simulated}
    assert "output_tok_s" in metrics and {"ttft_s", "itl_s", "tpot_s"} & metrics
    assert {r.scenario for r in simulated} >= {"offline", "concurrency", "server"}


def test_bad_rows_are_refused_with_the_line_and_column(tmp_path):
    good = (F.DATA / "rows_vendor.csv").read_text().splitlines()
    (tmp_path / "rows_x.csv").write_text("\n".join([good[0], good[1].replace(",offline,", ",sideways,", 1)]))
    with pytest.raises(ValueError, match=r"rows_x.csv line 2: scenario must be one of"):
        F.load_rows(tmp_path)
    (tmp_path / "rows_x.csv").write_text("\n".join([good[0], re.sub(r",value,[0-9.]+,", ",value,-3,", good[1])]))
    with pytest.raises(ValueError, match="value must be a positive number"):
        F.load_rows(tmp_path)
    (tmp_path / "rows_x.csv").write_text("\n".join([good[0], good[1] + "; TP8, assumed"]))
    with pytest.raises(ValueError, match=r"rows_x.csv line 2: 20 fields where the header has 19 \(an unquoted comma"):
        F.load_rows(tmp_path)
    (tmp_path / "rows_x.csv").write_text("\n".join([good[0], good[1] + '; "TP8, assumed"']))
    with pytest.raises(ValueError, match="20 fields"):            # a quote inside a field is no quoting
        F.load_rows(tmp_path)


def test_every_row_is_simulated_or_left_out_with_a_reason():
    predicted, excluded = REPORT["predicted"], REPORT["excluded"]
    assert set(predicted) | set(excluded) == {r.id for r in ROWS}
    assert not set(predicted) & set(excluded)
    for r in ROWS:
        assert (F.unsupported(r, DATASETS) or None) == excluded.get(r.id)


def _scored():
    by_id = {r.id: r for r in ROWS}
    return [F.Scored(by_id[i], p) for i, p in sorted(REPORT["predicted"].items())]


def _headline():
    return [s for s in _scored() if not F.saturated(s.row)]


def _saturated():
    return [s for s in _scored() if F.saturated(s.row)]


def _same_table(computed, stored):
    assert [(d, k, f["rows"]) for d, k, f in computed] == [(d, k, f["rows"]) for d, k, f in stored]
    for (_, _, f), (_, _, g) in zip(computed, stored):          # sums in another order: last-digit noise
        assert (f["mape"], f["bias"]) == pytest.approx((g["mape"], g["bias"]), rel=1e-12, abs=1e-15)


def test_reported_slices_are_computed_from_the_rows():
    _same_table(bench.slice_table(_headline()), REPORT["slices"])
    _same_table(bench.slice_table(_saturated(), dims=("metric", "gpu")), REPORT["saturated"])
    assert all(s.row.scenario in ("server", "interactive") for s in _saturated())


def test_readme_tables_are_the_report():
    readme = (ROOT / "README.md").read_text()
    assert bench.markdown(bench.slice_table(_headline())) in readme
    assert bench.markdown(bench.slice_table(_saturated(), dims=("metric", "gpu"))) in readme
    loso = REPORT["loso"]["all"]
    assert f"**{loso['mape']:.1%} MAPE** (bias {loso['bias']:+.1%})" in readme


def test_target_slices_are_computed_from_the_rows_and_shown_in_the_readme():
    loso = REPORT["loso"]
    assert set(loso["errors"]) == {s.row.id for s in _headline()}
    computed = bench.targets_table(_headline(), loso["errors"])
    assert [r["slice"] for r in computed] == ["all", *bench.TARGET_SLICES]
    for got, stored in zip(computed, REPORT["targets"]):
        assert got["rows"] == stored["rows"] and got["met"] == stored["met"]
        assert [got[k] for k in ("mape", "bias", "loso_mape", "loso_bias")] == pytest.approx(
            [stored[k] for k in ("mape", "bias", "loso_mape", "loso_bias")], rel=1e-12, abs=1e-15)
        assert got["met"] == (max(got["mape"], got["loso_mape"]) <= 0.15
                              and max(abs(got["bias"]), abs(got["loso_bias"])) <= 0.05)
    assert bench.targets_markdown(computed) in (ROOT / "README.md").read_text()


def test_capacity_rows_are_the_mlperf_throughput_rows():
    kinds = {s.row.id: s.row.kind for s in _headline()}
    capacity_rows = [r for r in ROWS if r.id in kinds and kinds[r.id] == "capacity at the SLO"]
    assert len(capacity_rows) >= 25
    assert all(r.scenario in ("server", "interactive") and r.metric in F.THROUGHPUT for r in capacity_rows)
    assert all(F.mlperf_limits(r) for r in capacity_rows)


def test_leave_one_source_out_figures_pool_the_sources():
    loso = REPORT["loso"]
    assert set(loso["sources"]) == {s.row.source for s in _headline()}
    assert loso["all"]["rows"] == len(_headline())
    pooled = [s.error for s in _headline()]
    assert loso["all"]["mape"] <= 2 * F.mape(pooled)
    assert all(list(v) in REPORT["grid"] for v in (f["value"] for f in loso["sources"].values()))


def test_residual_ranges_are_the_reports():
    from sim.presets import residuals
    ranges = bench.residual_ranges(_scored())
    assert {k: (round(v["low"], 4), round(v["high"], 4), v["rows"]) for k, v in ranges.items()} == residuals.RANGES
    assert residuals.BASE_OVERHEAD_S == REPORT["base_overhead_s"] == F.presets.BASE_OVERHEAD_S
    assert residuals.HOST_S_PER_SEQ == REPORT["host_s_per_seq"] == F.presets.HOST_S_PER_SEQ


# A sample of rows re-simulated: the stored predictions are what the simulator says now.
SAMPLE = [i for i in sorted(REPORT["predicted"]) if any(
    key in i for key in ("trtllm-0.13-h100-llama3.1-70b-fp8-tp8-2048-2048", "trtllm-0.20-h200-llama3.1-405b",
                         "nim-1.8.0-h100-llama3.3-70b-fp8-tp2-5000-500-c25", "azure-ndmi300x-vllm-llama3.1-70b-fp8-tp8-1024",
                         "mlperf-v4.1-nvidia-h200x8-llama2-70b-99-offline", "mlperf-v5.1-redhat-gx3-l40sx1-llama3.1-8b-offline",
                         "mlperf-v5.1-redhat-xe8640-h100x1-llama3.1-8b-server-tok"))]


@pytest.mark.parametrize("row_id", SAMPLE)
def test_stored_predictions_are_reproduced(row_id):
    row = next(r for r in ROWS if r.id == row_id)
    assert F.predict(row, DATASETS) == pytest.approx(REPORT["predicted"][row_id], rel=1e-9)


def test_sample_covers_several_scenarios():
    assert len(SAMPLE) >= 8


def test_dataset_lengths_keep_the_published_mean():
    rows = {r.input: r for r in ROWS if not r.input.isdigit() and DATASETS[r.input]["input"]}
    for name, row in rows.items():
        dist = F.length_of(row, "input", DATASETS)
        assert dist.mean == pytest.approx(DATASETS[name]["input"]["mean"], rel=0.08), name


def test_mape_and_bias():
    assert F.mape([0.1, -0.25]) == pytest.approx(0.175)
    assert F.bias([0.1, -0.25]) == pytest.approx(-0.075)
    with pytest.raises(ValueError):
        F.mape([])


def test_serial_kv_read_matches_the_measured_decode_steps():
    """The handbook rule's defaults and the serial KV read against 8 Llama-70B-shaped BF16 layers on one
    H200 (tests/validation/h200_decode_steps.json): each step's time from Setup.step_time."""
    from sim import Setup, presets
    steps = json.loads((ROOT / "tests" / "validation" / "h200_decode_steps.json").read_text())
    w = steps["weight_bytes"]
    kv_per_token = 2 * 8 * 128 * 2 * steps["layers"]             # K and V, 8 KV heads, BF16, per layer

    def errors(serial):
        s = Setup(params=w / 2, weight_bytes=w, kv_bytes_per_token=kv_per_token, kv_capacity_tokens=10**7,
                  peak_flops=presets.GPUS["h200"].bf16_flops, bandwidth=4.8e12 * presets.BANDWIDTH_UTIL,
                  mfu=presets.MFU, step_overhead=0.0, kv_serial=serial)
        return [s.step_time(d["batch"], d["batch"] * d["ctx"]) / d["graph_s"] - 1 for d in steps["decode"]]

    serial, overlapped = errors(1.0), errors(0.0)
    assert len(serial) == 7 and max(abs(e) for e in serial) < 0.13
    assert sum(abs(e) for e in serial) / 7 < 0.08 < sum(abs(e) for e in overlapped) / 7


def _row(row_id):
    return next(r for r in ROWS if r.id == row_id)


def test_a_rows_stated_token_budget_is_the_instances():
    # Cisco's 405B server config: max_num_tokens 8192 at build, 2560 at run time (the engine's budget).
    cisco = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    assert F.keyed(cisco, "max_num_tokens") == 2560
    assert F.setup_for(cisco).max_num_batched_tokens == 2560 and F.setup_for(cisco).max_num_seqs == 64
    dell = _row("mlperf-v5.0-dell-xe9680-h200x8-llama2-70b-interactive-99.9-interactive-tok")
    assert F.setup_for(dell).max_num_batched_tokens == 256
    unstated = _row("mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok")
    assert F.keyed(unstated, "max_num_tokens") is None
    assert F.setup_for(unstated).max_num_batched_tokens == F.engine_defaults(unstated)["max_num_batched_tokens"]
    with pytest.raises(ValueError, match="max_num_tokens must be a whole number"):
        F.setup_for(dataclasses.replace(dell, assumptions="max_num_tokens=25.5; " + dell.assumptions))


def test_every_stated_runtime_token_budget_is_keyed():
    # A row whose assumptions quote a max_num_tokens carries it as key=value (the harness reads only that).
    quoted = [r for r in ROWS if re.search(r"max_num_tokens \d", r.assumptions)]
    assert len(quoted) >= 25 and all(F.keyed(r, "max_num_tokens") for r in quoted)


def test_admission_policy_per_engine_family():
    from sim.kv import Paged, RatioReserve
    families = {r.id: F.admission_engine(r) for r in ROWS}
    assert families["mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok"] == "vllm"      # MAX_UTILIZATION
    assert families["mlperf-v4.1-amd-mi300x8-llama2-70b-99-server-tok"] == "vllm"
    assert {families[r.id] for r in ROWS if r.engine.startswith("SGLang")} == {"sglang"}
    assert {families[r.id] for r in ROWS if r.source.startswith(("trtllm-perf", "nim-"))} == {"trtllm"}
    row = _row("mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok")
    assert F.setup_for(row).kv is None                         # off by default: the handbook's reservation
    saved = F.ADMISSION
    try:
        F.ADMISSION = True
        assert isinstance(F.setup_for(row).kv, Paged)
        sglang = next(r for r in ROWS if r.engine.startswith("SGLang"))      # (ShareGPT rows: left out)
        assert isinstance(F.setup_for(sglang).kv, RatioReserve)
        trt = next(r for r in ROWS if r.source.startswith("trtllm-perf") and not F.unsupported(r, DATASETS))
        assert F.setup_for(trt).kv is None
    finally:
        F.ADMISSION = saved


def test_capacity_gap_diagnostics():
    spec = importlib.util.spec_from_file_location("capacity_gaps", ROOT / "benchmarks" / "capacity_gaps.py")
    gaps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gaps)
    assert gaps.in_flight(2.0, 0.5, 0.1, 11) == pytest.approx(2.0 * (0.5 + 10 * 0.1))
    runs = gaps.littles_law_rows(ROWS, REPORT["predicted"])
    assert len(runs) >= 15 and all(r["real"] > 0 and r["sim"] > 0 for r in runs)
    pairs = {r["run"]: r for r in gaps.server_offline_rows(ROWS, REPORT["predicted"])}
    rid = "mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok"
    row, offline = (next(r for r in ROWS if r.id == i) for i in (rid, rid.replace("-server-", "-offline-")))
    assert pairs[rid]["real"] == pytest.approx(row.value / offline.value)
    assert pairs[rid]["sim"] == pytest.approx(REPORT["predicted"][rid] / REPORT["predicted"][offline.id])
    assert len(pairs) >= 20 and all(r["run"].endswith(("-server-tok", "-interactive-tok")) for r in pairs.values())
    limits = {r["run"]: r for r in gaps.limit_rows(ROWS, REPORT["predicted"])}
    base = rid[: -len("-tok")]
    p99 = {m: next(r for r in ROWS if r.id == f"{base}-{m}-p99") for m in ("ttft", "tpot")}
    assert limits[base]["real_ttft"] == pytest.approx(p99["ttft"].value / 2.0)      # Llama-2-70B: 2 s, 200 ms
    assert limits[base]["real_tpot"] == pytest.approx(p99["tpot"].value / 0.2)
    assert limits[base]["sim_tpot"] == pytest.approx(REPORT["predicted"][p99["tpot"].id] / 0.2)
    assert limits[base]["sim_ttft"] == pytest.approx(REPORT["predicted"][p99["ttft"].id] / 2.0)
    assert limits[base]["error"] == pytest.approx(REPORT["predicted"][rid] / row.value - 1)
    assert len(limits) >= 20 and all(0 < r["real_ttft"] <= 1 and 0 < r["real_tpot"] <= 1 for r in limits.values())
    # an interactive run is judged against its own, tighter limits (70B interactive: 450 ms, 40 ms)
    interactive = "mlperf-v5.0-dell-xe9680-h200x8-llama2-70b-interactive-99.9-interactive"
    tpot99 = next(r for r in ROWS if r.id == f"{interactive}-tpot-p99")
    assert limits[interactive]["real_tpot"] == pytest.approx(tpot99.value / F.mlperf_limits(tpot99)[1])
    assert F.mlperf_limits(tpot99)[1] < 0.2
    # a run the report did not simulate keeps None, not a number
    unsimulated = limits["mlperf-v5.0-nvidia-h100x8-llama2-70b-99.9-server"]
    assert unsimulated["error"] is None and unsimulated["sim_tpot"] is None and unsimulated["real_tpot"] > 0
    left_out: list = []
    gaps.limit_rows(ROWS, REPORT["predicted"], left_out)
    assert "mlperf-v5.1-nvidia-gb200x4-llama2-70b-server" in left_out          # no published p99s
    assert not set(left_out) & set(limits)
    inputs = json.loads(gaps.KERNEL_INPUTS.read_text())
    h200 = next(r for r in gaps.allreduce_rows(inputs) if r["gpu"] == "h200" and r["tp"] == 8)
    measured_256 = float(inputs["gpus"]["h200"]["allreduce"]["tp8"][str(256 * 2 ** 20)]) * 1e-6
    alpha, beta = F.presets.kernels.KERNELS["h200"]["allreduce"][8]
    assert h200["ratios"][256] == pytest.approx((alpha + 256 * 2 ** 20 / beta) / measured_256)
