"""Judge one file against one problem (the glue between the catalog and the runner)."""
from __future__ import annotations

from pathlib import Path

from .catalog import Problem
from .runner import Limits, judge_file
from .verdicts import Report


def limits_for(problem: Problem, case_s: float | None = None, memory_mb: int | None = None,
               run_s: float | None = None) -> Limits:
    return Limits(case_s=case_s or problem.time_limit_s, run_s=run_s or problem.run_limit_s,
                  memory_mb=memory_mb or problem.memory_mb)


def judge(problem: Problem, path: Path, *, examples_only: bool = False,
          limits: Limits | None = None) -> Report:
    tests = [problem.example_tests] if examples_only else [problem.example_tests, problem.hidden_tests]
    return judge_file(Path(path), problem.solution_path, tests, limits or limits_for(problem))
