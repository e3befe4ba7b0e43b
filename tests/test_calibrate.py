"""sim.calibrate: vLLM benchmark files in, the step model's terms out, and the profile they make."""

import json

import pytest

from calibrate_files import vllm_result, write
from sim import calibrate, lengths, plan, presets
from sim import profile as profiles
from sim.cli import main

BASE = presets.instance("llama-3-8b", "h100-sxm", tp=1, max_num_seqs=256)
TRUE = BASE.replace(mfu=BASE.mfu * 0.8, bandwidth=BASE.bandwidth * 0.9, step_overhead=BASE.step_overhead * 1.5)
DEPLOYMENT = dict(model="llama-3-8b", gpu="h100-sxm", tp=1, weight_dtype="bf16", kv_dtype="bf16")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A deployment's benchmark campaign, as vLLM would have saved it, from a Setup with known terms:
    one client, 16 and 64 clients, a Poisson rate, an offline batch; some with --save-detailed."""
    d = tmp_path_factory.mktemp("runs")
    return [write(d / "c1.json", vllm_result(TRUE, {"max_concurrency": 1}, 1000, 200, 40, detailed=True)),
            write(d / "c16.json", vllm_result(TRUE, {"max_concurrency": 16}, 1000, 200, 160, detailed=False)),
            write(d / "c64.json", vllm_result(TRUE, {"max_concurrency": 64}, lengths.uniform(200, 2000),
                                              lengths.uniform(50, 400), 400, detailed=True)),
            write(d / "r8.json", vllm_result(TRUE, {"request_rate": 8.0}, 1500, 300, 300, detailed=True, seed=4)),
            write(d / "offline.json", vllm_result(TRUE, {}, 800, 200, 600, detailed=False))]


@pytest.fixture(scope="module")
def fitted(files):
    return calibrate.calibrate(files, "llama-3-8b", "h100-sxm", tp=1, max_num_seqs=256)


def test_known_terms_are_recovered_within_2_percent(fitted):
    fit, deployment = fitted
    assert deployment == DEPLOYMENT
    for term in calibrate.DEFAULT_TERMS:
        assert fit.terms[term] == pytest.approx(getattr(TRUE, term), rel=0.02), term
        assert fit.preset[term] == getattr(BASE, term)
    assert fit.rms < 0.01 and len(fit.residuals) == 5
    assert all(abs(e) < 0.02 for r in fit.residuals.values() for e in r.values())


def test_progress_counts_every_simulated_run(files):
    ms = [calibrate.read(f) for f in files[:1]]
    seen = []
    calibrate.fit(ms, TRUE, terms=["mfu"], progress=seen.append)
    assert seen == list(range(1, len(seen) + 1)) and len(seen) >= 3   # residuals, Jacobian, final


def test_fewer_terms_fit_only_those(files):
    ms = [calibrate.read(f) for f in files[:2]]
    fit = calibrate.fit(ms, BASE.replace(bandwidth=TRUE.bandwidth, step_overhead=TRUE.step_overhead), terms=["mfu"])
    assert set(fit.terms) == {"mfu"} and fit.terms["mfu"] == pytest.approx(TRUE.mfu, rel=0.02)
    with pytest.raises(ValueError, match="terms"):
        calibrate.fit(ms, BASE, terms=["mfu", "kv_serial"])
    with pytest.raises(ValueError, match="terms"):
        calibrate.fit(ms, BASE, terms=list(calibrate.DEFAULT_TERMS) + ["mfu"])
    with pytest.raises(ValueError, match="terms"):
        calibrate.fit(ms, BASE, terms=list(calibrate.TERMS))          # four: at most three


def test_host_time_per_sequence_is_recovered(tmp_path):
    """The fourth term, host time per decoding sequence, fitted with the fixed overhead: runs at
    1, 16 and 64 clients separate the two (the per-sequence part grows with the batch)."""
    true = BASE.replace(step_overhead=BASE.step_overhead * 0.5, host_s_per_seq=30e-6)
    files = [write(tmp_path / f"c{c}.json", vllm_result(true, {"max_concurrency": c}, 1000, 200, 4 * c + 40,
                                                        detailed=True)) for c in (1, 16, 64)]
    fit = calibrate.fit([calibrate.read(f) for f in files], BASE, terms=["step_overhead", "host_s_per_seq"])
    assert fit.terms["host_s_per_seq"] == pytest.approx(30e-6, rel=0.02)
    assert fit.terms["step_overhead"] == pytest.approx(true.step_overhead, rel=0.02)


def test_reading_details_and_summaries(files):
    detailed, summary = calibrate.read(files[0]), calibrate.read(files[1])
    assert detailed.detailed and detailed.kind == "concurrency" and detailed.concurrency == 1
    assert not summary.detailed and summary.input_len == (1000,) * 160 and summary.output_len == (200,) * 160
    rate = calibrate.read(files[3])
    assert rate.kind == "rate" and rate.rate == 8.0 and rate.arrival[0] == 0.0 and len(rate.arrival) == 300
    assert calibrate.read(files[4]).kind == "offline"
    data = json.loads(files[1].read_text())
    assert summary.stats["ttft_mean"] == pytest.approx(data["mean_ttft_ms"] / 1e3)


def test_the_profile_round_trips_into_presets_plan_and_the_cli(fitted, tmp_path, capsys):
    fit, deployment = fitted
    path = tmp_path / "h100.json"
    calibrate.write_profile(path, fit, deployment)
    setup = presets.instance("llama-3-8b", "h100-sxm", tp=1, max_num_seqs=256, profile=path)
    assert (setup.mfu, setup.bandwidth, setup.step_overhead) == tuple(fit.terms[t] for t in calibrate.DEFAULT_TERMS)
    assert setup.replace(mfu=BASE.mfu, bandwidth=BASE.bandwidth, step_overhead=BASE.step_overhead) == BASE
    p = plan(20, setup, 1000, 200, 1.0, 0.05, gpus_per_instance=1)
    assert p.rate_per_instance > 0
    assert main(["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--qps", "20", "--input", "1000",
                 "--output", "200", "--ttft", "1", "--tpot", "0.05", "--profile", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rate_per_instance"] > 0
    with pytest.raises(ValueError, match="fitted on gpu='h100-sxm', not gpu='h200'"):
        presets.instance("llama-3-8b", "h200", profile=path)
    with pytest.raises(ValueError, match="either a profile or"):
        presets.instance("llama-3-8b", "h100-sxm", profile=path, mfu=0.5)


def test_the_calibrate_command_prints_residuals_and_writes_a_profile(files, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["calibrate", *map(str, files[:2]), "--model", "llama-3-8b", "--gpu", "h100-sxm",
                 "--fit", "mfu,step_overhead", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "c1.json" in text and "c16.json" in text and "ttft_mean" in text and "wrote" in text
    assert set(profiles.load(out)["terms"]) == {"mfu", "step_overhead"}
    assert main(["calibrate", str(tmp_path / "missing.json"), "--model", "llama-3-8b", "--gpu", "h100-sxm",
                 "--out", str(out)]) == 2
    assert "missing.json: cannot read it" in capsys.readouterr().err


def _bad(tmp_path, files, change):
    data = json.loads(files[0].read_text())
    change(data)
    return write(tmp_path / "bad.json", data)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("output_throughput"), "field 'output_throughput' is missing"),
    (lambda d: d.update(request_rate=-2), "field 'request_rate' must be a number > 0 or \"inf\""),
    (lambda d: d.update(request_rate=4.0), "fields 'request_rate' .* and 'max_concurrency' .* are both set"),
    (lambda d: d.update(ttfts=d["ttfts"][:-1]), "field 'ttfts' must be a list of 40 entries"),
    (lambda d: d.update(output_lens=["x"] + d["output_lens"][1:]), "field 'output_lens' entry 0"),
    (lambda d: d.update(max_concurrency=0), "field 'max_concurrency' must be a whole number >= 1"),
    (lambda d: d.update(errors=["timeout"] * 40), "no successful request"),
    (lambda d: [d.pop(k) for k in ("latencies", "itls")], "fields 'latencies' or 'itls' are needed"),
])
def test_malformed_files_name_the_file_and_the_field(tmp_path, files, change, message):
    path = _bad(tmp_path, files, change)
    with pytest.raises(ValueError, match=f"bad.json: {message}"):
        calibrate.read(path)


def test_summary_files_need_their_fields(tmp_path, files):
    data = json.loads(files[1].read_text())
    data["mean_tpot_ms"] = "fast"
    with pytest.raises(ValueError, match="bad.json: field 'mean_tpot_ms' must be a number"):
        calibrate.read(write(tmp_path / "bad.json", data))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not JSON"):
        calibrate.read(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="bad.json: a vllm bench serve result is a JSON object"):
        calibrate.read(tmp_path / "bad.json")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="other"), "field 'format' must be 'sim-profile/1'"),
    (lambda d: d["terms"].update(mfu=1.5), r"field 'terms.mfu' must be in \(0, 1\]"),
    (lambda d: d["terms"].update(kv_serial=1.0), "field 'terms.kv_serial' is not a step-model term"),
    (lambda d: d["terms"].update(bandwidth=-1.0), "field 'terms.bandwidth' must be a number >= 0"),
    (lambda d: d.pop("deployment"), "field 'deployment' must name"),
])
def test_malformed_profiles_name_the_field(tmp_path, fitted, change, message):
    fit, deployment = fitted
    path = tmp_path / "p.json"
    calibrate.write_profile(path, fit, deployment)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"p.json: {message}"):
        presets.instance("llama-3-8b", "h100-sxm", profile=path)


def test_sweep_and_fleet_take_the_profile(fitted, tmp_path, capsys):
    from sim.sweep import sweep
    fit, deployment = fitted
    path = tmp_path / "h100.json"
    calibrate.write_profile(path, fit, deployment)
    rows = sweep("llama-3-8b", 20, 1000, 200, 1.0, 0.05, workers=1,
                 grid={"gpu": ["h100-sxm", "h200"], "tp": [1], "profile": [str(path)]})
    by_gpu = {r.settings["gpu"]: r for r in rows}
    assert by_gpu["h100-sxm"].feasible and by_gpu["h100-sxm"].rate_per_instance > 0
    assert not by_gpu["h200"].feasible and "fitted on gpu='h100-sxm'" in by_gpu["h200"].reason
    args = ["--model", "llama-3-8b", "--qps", "20", "--input", "1000", "--output", "200", "--ttft", "1",
            "--tpot", "0.05", "--profile", str(path)]
    assert main(["fleet", "--gpu", "h200", *args]) == 2          # read before any fleet is simulated
    assert "fitted on gpu='h100-sxm'" in capsys.readouterr().err
