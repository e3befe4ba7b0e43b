"""Judge one file against one problem (the glue between the catalog and the runner)."""
from __future__ import annotations

from pathlib import Path

from .catalog import Problem
from .runner import SANDBOX, Limits, judge_file
from .verdicts import Report


DECLARED_TESTS = SANDBOX / "test_declared.py"   # the cases generated from declare.py


def limits_for(problem: Problem, case_s: float | None = None, memory_mb: int | None = None,
               run_s: float | None = None) -> Limits:
    return Limits(case_s=problem.time_limit_s if case_s is None else case_s,
                  run_s=problem.run_limit_s if run_s is None else run_s,
                  memory_mb=problem.memory_mb if memory_mb is None else memory_mb)


def judge(problem: Problem, path: Path, *, examples_only: bool = False,
          limits: Limits | None = None) -> Report:
    tests = [problem.example_tests]
    if not examples_only:
        tests.append(problem.hidden_tests)
        if problem.declaration_path.is_file():
            tests.append(DECLARED_TESTS)
    return judge_file(Path(path), problem.solution_path, tests, limits or limits_for(problem))
