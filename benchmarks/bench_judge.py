"""Wall time to judge problem 184: the reference (every case passes) and the starter (every case
raises NotImplementedError), each the best of a few runs. The reference should stay under 1 s.

    .venv/bin/python benchmarks/bench_judge.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from practice import catalog                               # noqa: E402
from practice.judging import judge                         # noqa: E402

RUNS = 3
BUDGET_S = 1.0


def timed(label: str, path: Path) -> float:
    best = float("inf")
    report = None
    for _ in range(RUNS):
        start = time.perf_counter()
        report = judge(PROBLEM, path)
        best = min(best, time.perf_counter() - start)
    isolation = (report.sandbox or {}).get("landlock", "-")
    print(f"{label:40} {best:8.3f} s   {report.passed:>3} / {report.total} passed   landlock: {isolation}")
    return best


PROBLEM = catalog.find("184")


def main() -> int:
    reference = timed("judge 184, reference (best of 3)", PROBLEM.solution_path)
    timed("judge 184, starter (best of 3)", PROBLEM.starter_path)
    if reference > BUDGET_S:
        print(f"reference took {reference:.3f} s, over the {BUDGET_S:.0f} s budget")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
