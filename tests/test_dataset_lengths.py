"""The validation set's length distributions: the datasets' own percentiles, and the script that stores them.

``tests/validation/datasets.json`` carries, for each MLPerf dataset side read from the per-sample
CSVs, its 0th..100th percentiles (``benchmarks/dataset_percentiles.py``); ``fidelity.length_of``
draws lengths through them. Without them the inverse CDF ran from one token up to the p10, which
invented short requests the datasets do not hold.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import fidelity as F                                           # noqa: E402

_spec = importlib.util.spec_from_file_location("dataset_percentiles", ROOT / "benchmarks" / "dataset_percentiles.py")
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

DATASETS = F.load_datasets()
WITH_PERCENTILES = [(name, side) for name, facts in DATASETS.items() for side in ("input", "output")
                    if facts.get(side, {}).get("percentiles")]
ROWS = F.load_rows()
USED = [(name, side) for name, side in WITH_PERCENTILES if any(getattr(r, side) == name for r in ROWS)]


def test_the_mlperf_datasets_carry_their_percentiles():
    assert {("llama3.1-405b-mix", "output"), ("llama3.1-405b-mix", "input"), ("mixtral-mix", "output"),
            ("openorca-llama2", "output"), ("cnn-dailymail-llama3.1-8b", "input")} <= set(WITH_PERCENTILES)
    assert ("cnn-dailymail-llama3.1-8b", "output") not in WITH_PERCENTILES     # chars/4 there, not tokens


@pytest.mark.parametrize("name,side", WITH_PERCENTILES)
def test_stored_percentiles_agree_with_the_stored_quantiles(name, side):
    facts = DATASETS[name][side]
    p = facts["percentiles"]
    assert len(p) == 101 and p[0] >= 1 and all(a <= b for a, b in zip(p, p[1:]))
    for key, q in (("p10", 10), ("median", 50), ("p90", 90), ("p99", 99), ("max", 100)):
        if facts.get(key) is not None:
            assert p[q] == pytest.approx(float(facts[key]), abs=0.51), key


def _row(name):
    return next(r for r in ROWS if r.output == name and not F.unsupported(r))


@pytest.mark.parametrize("name,side", USED)
def test_drawn_lengths_follow_the_percentiles_scaled_to_the_mean(name, side):
    rows = [r for r in ROWS if getattr(r, side) == name]
    dist = F.length_of(rows[0], side, DATASETS)
    samples = np.asarray(dist.samples)
    facts = DATASETS[name][side]
    target = F.keyed(rows[0], "output_mean") if side == "output" else None
    target = target or (facts.get("generated_mean") if side == "output" else None) or facts["mean"]
    assert dist.mean == pytest.approx(target, rel=2e-3)
    scale = dist.mean / facts["mean"]
    for q in (1, 5, 25, 50, 75, 95):
        assert np.percentile(samples, q) == pytest.approx(facts["percentiles"][q] * scale, rel=0.05, abs=1.5), q


def test_the_405b_mix_has_no_invented_short_outputs():
    """The dataset's shortest 1% of reference outputs are 192 tokens and more; the old rule drew 5%
    under 21 tokens (log-linear from 1 at the bottom to 217 at p10), and those set the p99 TPOT."""
    row = _row("llama3.1-405b-mix")
    samples = np.asarray(F.length_of(row, "output", DATASETS).samples)
    assert (samples < 100).mean() < 0.01
    without = {k: v for k, v in DATASETS["llama3.1-405b-mix"]["output"].items() if k != "percentiles"}
    old = np.asarray(F._dataset_length("x", "output", json.dumps(without, sort_keys=True), 654.0).samples)
    assert (old < 21).mean() > 0.04                          # what the quantiles alone give


def test_without_percentiles_the_quantiles_are_continued_down_to_one():
    facts = {"mean": 100.0, "median": 90.0, "p10": 30.0, "p90": 200.0, "max": 400}
    samples = np.asarray(F._dataset_length("y", "output", json.dumps(facts, sort_keys=True), 100.0).samples)
    assert samples.min() == 1 and samples.max() <= 400
    assert np.percentile(samples, 10) == pytest.approx(30 * samples.mean() / 100, rel=0.1)


# --- benchmarks/dataset_percentiles.py -----------------------------------------------------------

def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def mirror(tmp_path):
    repo = tmp_path / "dashboard"
    (repo / "mlperf-data" / "summaries").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    lengths = "\n".join(f"{100 + i},{10 + (i * 7) % 90}" for i in range(200))
    (repo / "mlperf-data" / "summaries" / "toy.csv").write_text("input_length,output_length\n" + lengths + "\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "toy")
    return repo, _git(repo, "rev-parse", "HEAD")


def _facts(commit, **output):
    url = f"https://github.com/o/performance-dashboard/blob/{commit}/mlperf-data/summaries/toy.csv (per sample)"
    inputs = np.arange(100, 300)
    return {"toy": {"n_samples": 200, "source": url,
                    "input": {"mean": float(inputs.mean()), "p10": float(np.percentile(inputs, 10)),
                              "median": float(np.median(inputs))},
                    "output": {"mean": 55.0, **output}}}


def test_the_script_stores_the_csvs_percentiles_at_the_cited_commit(mirror):
    repo, commit = mirror
    datasets = _facts(commit)
    done = script.update(datasets, repo)
    assert done == ["toy input: min 100, p1 102, p5 110, p10 119.9"]
    assert datasets["toy"]["input"]["percentiles"] == [round(float(v), 1) for v in np.percentile(np.arange(100, 300), np.arange(101))]
    assert "percentiles" not in datasets["toy"]["output"]               # no quantiles from this CSV there
    text = script.dumps(datasets)
    assert json.loads(text) == datasets
    assert sum('"percentiles": [' in line and line.rstrip().endswith("]") for line in text.splitlines()) == 1


def test_the_script_refuses_a_csv_that_is_not_the_one_cited(mirror):
    repo, commit = mirror
    datasets = _facts(commit)
    datasets["toy"]["input"]["median"] = 150.0                          # the CSV's median is 199.5
    with pytest.raises(ValueError, match="toy input: the CSV's median 199.5 is not the stored 150.0"):
        script.update(datasets, repo)
    datasets = _facts(commit)
    datasets["toy"]["n_samples"] = 201
    with pytest.raises(ValueError, match="200 rows in the CSV, n_samples says 201"):
        script.update(datasets, repo)
    with pytest.raises(ValueError, match="cannot read mlperf-data/summaries/toy.csv at commit 0000000000"):
        script.update(_facts("0" * 40), repo)                           # a commit the mirror lacks
    csv_file = repo / "mlperf-data" / "summaries" / "toy.csv"
    csv_file.write_text("tokens_in,tokens_out\n" + csv_file.read_text().split("\n", 1)[1])
    _git(repo, "commit", "-q", "-am", "renamed columns")
    with pytest.raises(ValueError, match="toy input: the CSV mlperf-data/summaries/toy.csv has no column 'input_length'"):
        script.update(_facts(_git(repo, "rev-parse", "HEAD")), repo)


def test_the_script_reports_a_bad_mirror_and_writes_nothing(tmp_path, capsys, monkeypatch):
    target = tmp_path / "datasets.json"
    target.write_text(script.DATASETS.read_text())
    monkeypatch.setattr(script, "DATASETS", target)
    before = target.read_bytes()
    assert script.main([str(tmp_path / "not-a-mirror")]) == 1
    assert "cannot read" in capsys.readouterr().err and target.read_bytes() == before


def test_the_script_needs_the_mirror(capsys):
    assert script.main([]) == 2
    assert "dataset_percentiles.py MIRROR" in capsys.readouterr().err
