"""Write each MLPerf dataset's length percentiles into tests/validation/datasets.json.

    .venv/bin/python benchmarks/dataset_percentiles.py MIRROR

MIRROR is a git mirror of openshift-psap/performance-dashboard. Each dataset's CSV is read at the
commit its ``source`` URL in datasets.json names (``.../blob/<commit>/mlperf-data/summaries/<file>``),
and the 0th, 1st, ..., 100th percentiles of each side it is the source of are stored as
``percentiles`` (101 numbers, numpy's linear interpolation between order statistics).
``fidelity.length_of`` draws lengths through them, so the bottom of a distribution is what the
dataset holds and not a guess: with only p10 and the median to go on, the inverse CDF had to be
continued down to one token, which gave Llama-3.1-405B's mix 5% of outputs under 21 tokens where
the dataset's shortest 5% are 210 tokens and more, and those made-up short outputs set the p99 TPOT.

The 8B dataset's output column is a characters/4 approximation (its notes), so only its input side
is written; a side whose facts carry no quantiles from this source is left alone.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import DATA, QUANTILES                       # noqa: E402  (the quantiles a dataset publishes)

DATASETS = DATA / "datasets.json"
SOURCE = re.compile(r"performance-dashboard/blob/([0-9a-f]{40})/(mlperf-data/summaries/[\w.-]+\.csv)")
COLUMNS = {"input": "input_length", "output": "output_length"}


def percentiles(values) -> list[float]:
    return [round(float(v), 1) for v in np.percentile(np.asarray(values, float), np.arange(101))]


def read_csv(mirror: Path, commit: str, path: str) -> list[dict]:
    """The CSV at ``path`` as of ``commit`` in the mirror; a clear error where git cannot show it."""
    shown = subprocess.run(["git", "-C", str(mirror), "show", f"{commit}:{path}"],
                           capture_output=True, text=True)
    if shown.returncode:
        why = (shown.stderr.strip().splitlines() or ["git failed"])[-1]
        raise ValueError(f"{mirror}: cannot read {path} at commit {commit} ({why}); "
                         "is MIRROR a mirror of the repository the source cites?")
    return list(csv.DictReader(io.StringIO(shown.stdout)))


def update(datasets: dict, mirror: Path) -> list[str]:
    """Add ``percentiles`` to every side whose published quantiles come from the dashboard CSV."""
    done = []
    for name, facts in datasets.items():
        m = SOURCE.search(facts.get("source", ""))
        sides = [side for side in COLUMNS if facts.get(side, {}).get("p10")]   # the sides the CSV is the source of
        if not m or not sides:
            continue
        rows = read_csv(mirror, m.group(1), m.group(2))
        if len(rows) != facts.get("n_samples", len(rows)):
            raise ValueError(f"{name}: {len(rows)} rows in the CSV, n_samples says {facts['n_samples']}")
        for side in sides:
            column = COLUMNS[side]
            if rows and column not in rows[0]:
                raise ValueError(f"{name} {side}: the CSV {m.group(2)} has no column {column!r}")
            p = percentiles([float(r[column]) for r in rows])
            for key, q in QUANTILES:
                stored = facts[side].get(key)
                if stored is not None and abs(p[round(q * 100)] - float(stored)) > 0.51:
                    raise ValueError(f"{name} {side}: the CSV's {key} {p[round(q * 100)]} is not the stored {stored}")
            facts[side]["percentiles"] = p
            done.append(f"{name} {side}: min {p[0]:g}, p1 {p[1]:g}, p5 {p[5]:g}, p10 {p[10]:g}")
    return done


def dumps(datasets: dict) -> str:
    """The file's own layout (one key per line), each percentile list on one line."""
    text = json.dumps(datasets, indent=1, ensure_ascii=False) + "\n"
    return re.sub(r'"percentiles": \[([^\]]*)\]',
                  lambda m: '"percentiles": [' + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    datasets = json.loads(DATASETS.read_text())
    try:
        done = update(datasets, Path(argv[0]))
    except ValueError as e:                         # nothing is written when any dataset disagrees
        print(f"dataset_percentiles: {e}", file=sys.stderr)
        return 1
    for line in done:
        print(line)
    DATASETS.write_text(dumps(datasets))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
