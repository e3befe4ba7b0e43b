"""Maintainer checks (``judge.py check``): every problem is complete and consistent.

- ids are unique, folder names are ``<id>-<slug>``, the front matter has every required key;
- each problem has its five files, a hint and an explanation section;
- the statement's ```json example``` block equals ``EXAMPLE`` in ``test_example.py`` and what the
  reference computes for it;
- the starter and the reference define the listed functions with the same signatures;
- judged in the sandbox, the reference passes every case, the starter fails every case,
  ``test_example.py`` has exactly one case and ``test_hidden.py`` at least one.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import catalog
from .judging import judge
from .runner import SANDBOX
from .verdicts import cannot_text, reason_text

FILES = ("problem.md", "starter.py", "solution.py", "test_example.py", "test_hidden.py")


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _judgekit():
    return _load_module(SANDBOX / "judgekit.py", "_practice_judgekit")


def _literal_example(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXAMPLE"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _signatures(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name: ast.unparse(node.args) for node in tree.body if isinstance(node, ast.FunctionDef)}


def _normal(value):
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items()}
    return value


def static_issues(problem: catalog.Problem) -> list[str]:
    issues = []
    p = problem.key
    for key in catalog.REQUIRED_KEYS:
        if problem.meta.get(key) in (None, "", []):
            issues.append(f"{p}: front matter lacks '{key}'")
    if problem.meta.get("difficulty") not in catalog.DIFFICULTIES:
        issues.append(f"{p}: difficulty must be one of {'/'.join(catalog.DIFFICULTIES)}")
    if problem.folder.name != problem.key:
        issues.append(f"{problem.folder.name}: folder name differs from '<id>-<slug>' = {problem.key}")
    missing = [f for f in FILES if not (problem.folder / f).is_file()]
    if missing:
        issues.append(f"{p}: missing files {', '.join(missing)}")
        return issues
    if not problem.hint:
        issues.append(f"{p}: no '{catalog.HINT_HEADING}' section")
    if not problem.explanation:
        issues.append(f"{p}: no '{catalog.EXPLANATION_HEADING}' section")
    try:
        example = problem.example
    except (ValueError, catalog.FrontMatterError) as exc:
        issues.append(f"{p}: {exc}")
        return issues
    stated = _literal_example(problem.example_tests)
    if stated is None:
        issues.append(f"{p}: test_example.py has no EXAMPLE literal")
    elif _normal(stated) != _normal(example):
        issues.append(f"{p}: EXAMPLE in test_example.py differs from the statement's example block")
    if example.get("function") not in problem.functions:
        issues.append(f"{p}: the example calls {example.get('function')!r}, not a listed function")
    starter, solution = _signatures(problem.starter_path), _signatures(problem.solution_path)
    for name in problem.functions:
        if name not in solution:
            issues.append(f"{p}: solution.py lacks {name}()")
        elif name not in starter:
            issues.append(f"{p}: starter.py lacks {name}()")
        elif starter[name] != solution[name]:
            issues.append(f"{p}: {name}() signature differs: starter ({starter[name]}) "
                          f"vs solution ({solution[name]})")
    try:
        ref = _load_module(problem.solution_path, f"_practice_ref_{problem.id}")
        got = getattr(ref, example["function"])(*example.get("args", []), **example.get("kwargs", {}))
        _judgekit().check_close(got, example["expected"], rtol=example.get("rtol", 1e-9),
                                atol=example.get("atol", 0.0))
    except AssertionError as exc:
        issues.append(f"{p}: the statement's expected values differ from the reference ({exc})")
    except Exception as exc:  # noqa: BLE001
        issues.append(f"{p}: the reference fails on the worked example: {type(exc).__name__}: {exc}")
    return issues


def dynamic_issues(problem: catalog.Problem, lang: str = "zh") -> list[str]:
    issues = []
    p = problem.key
    ref = judge(problem, problem.solution_path)
    if ref.cannot is not None:
        return [f"{p}: the reference cannot be judged: {cannot_text(ref.cannot, lang)}"]
    examples = [c for c in ref.cases if c.is_example]
    hidden = [c for c in ref.cases if not c.is_example]
    if len(examples) != 1:
        issues.append(f"{p}: test_example.py must hold exactly one case, has {len(examples)}")
    if not hidden:
        issues.append(f"{p}: test_hidden.py has no cases")
    for case in ref.cases:
        if not case.passed:
            issues.append(f"{p}: the reference fails {case.case}: {case.verdict} {reason_text(case, lang)}")
    starter = judge(problem, problem.starter_path)
    if starter.cannot is not None:
        issues.append(f"{p}: the starter cannot be judged: {cannot_text(starter.cannot, lang)}")
    for case in starter.cases:
        if case.passed:
            issues.append(f"{p}: the starter passes {case.case} (a case that tests nothing)")
    return issues


def check_all(keys: list[str] | None = None, lang: str = "zh", log=print) -> tuple[list[str], int]:
    issues: list[str] = []
    folders = catalog.problem_folders()
    problems = []
    for folder in folders:
        try:
            problems.append(catalog.load_problem(folder))
        except (OSError, ValueError) as exc:
            issues.append(f"{folder.name}: cannot read problem.md: {exc}")
    seen: dict[int, str] = {}
    for problem in problems:
        try:
            pid = problem.id
        except (KeyError, TypeError, ValueError):
            continue
        if pid in seen:
            issues.append(f"id {pid} is used by both {seen[pid]} and {problem.folder.name}")
        seen[pid] = problem.folder.name
    if keys:
        wanted = {str(k) for k in keys}
        problems = [p for p in problems if str(p.meta.get("id")) in wanted or p.folder.name in wanted]
    if not problems:
        issues.append("no problems found")
        return issues, 0
    static = {p.key: static_issues(p) for p in problems}
    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        dynamic = dict(zip([p.key for p in problems],
                           pool.map(lambda pr: dynamic_issues(pr, lang) if not any(
                               "missing files" in i for i in static[pr.key]) else [], problems)))
    for problem in problems:
        found = static[problem.key] + dynamic[problem.key]
        log(f"{'ok  ' if not found else 'FAIL'} {problem.key}")
        issues.extend(found)
    return issues, len(problems)
