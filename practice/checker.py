"""Maintainer checks (``judge.py check``): every problem is complete and consistent.

- ids are unique, folder names are ``<id>-<slug>``, the front matter has every required key;
- each problem has its five files, a hint and an explanation section;
- the statement's ```json example``` block equals ``EXAMPLE`` in ``test_example.py`` and what the
  reference computes for it;
- the starter and the reference define the listed functions with the same signatures;
- judged in the sandbox, the reference passes every case, the starter fails every case,
  ``test_example.py`` has exactly one case and ``test_hidden.py`` at least one;
- every listed function has a signature with a return type (``name(...) -> T``) in the statement;
- the arguments the hidden tests check with ``expect_value_error`` and the ones the statement's
  input-check section (``### 输入检查``) names are the same set (see ``input_check_issues``);
- ``declare.py`` declares every listed function (parameters as in the reference, a valid example,
  the return type), and the statement's generated input-check block equals its rendering
  (``declaration.issues``); the prose signatures give the declared return types;
- with ``--mutants``: the hidden tests catch at least 95% of the reference's non-equivalent
  single-point mutants (``mutants.py``).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import catalog
from .judging import judge
from .runner import SANDBOX
from .verdicts import cannot_text, reason_text

FILES = ("problem.md", "starter.py", "solution.py", "test_example.py", "test_hidden.py")
# Problems written before declarations existed and not converted yet: ``check`` notes them instead
# of failing. Every other problem needs a ``declare.py``; this set only ever shrinks.
UNDECLARED = frozenset({})


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


INPUT_CHECK_HEADING = re.compile(r"^(#{2,4})\s*输入检查\s*$", re.M)


def input_check_section(statement: str) -> str | None:
    """The text of the statement's ``### 输入检查`` section (to the next heading of its level or
    above), or None."""
    m = INPUT_CHECK_HEADING.search(statement)
    if m is None:
        return None
    level = len(m.group(1))
    rest = statement[m.end():]
    end = re.search(r"^#{1,%d}\s" % level, rest, re.M)
    return rest[:end.start()] if end else rest


def _parameters(path: Path, names: list[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    params = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            a = node.args
            params |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    return params


def input_check_issues(problem: catalog.Problem) -> list[str]:
    """Arguments validated by the hidden tests but not named in the statement's input-check
    section, and arguments named there that no hidden case checks. The tests' fields come from an
    in-process run of the reference that records every ``expect_value_error(..., field=...)``."""
    from . import mutants
    p = problem.key
    section = input_check_section(problem.statement)
    if section is None:
        return [f"{p}: the statement has no '### 输入检查' section"]
    try:
        tested, failures = mutants.validated_fields(problem)
    except Exception as exc:  # noqa: BLE001
        return [f"{p}: cannot run the tests in process: {type(exc).__name__}: {exc}"]
    issues = [f"{p}: the reference fails in process: {f}" for f in failures[:3]]
    params = _parameters(problem.solution_path, problem.functions)
    named = {w for w in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", section) if w in params | tested}
    for name in sorted(tested - named):
        issues.append(f"{p}: the hidden tests validate '{name}' but the input-check section does not name it")
    declared = set()
    if problem.declaration_path.is_file():     # every declared parameter has its generated case
        from . import declaration
        try:
            declared = {name for fn in declaration.load(problem).values() for name in fn.params}
        except Exception:  # noqa: BLE001 - reported by the declaration check
            pass
    for name in sorted(named - tested - declared):
        issues.append(f"{p}: the input-check section names '{name}' but no hidden case checks it")
    return issues


def signature_issues(problem: catalog.Problem) -> list[str]:
    """Every listed function appears in the statement as ``name(...) -> T``."""
    issues = []
    for name in problem.functions:
        if not re.search(r"`" + re.escape(name) + r"\(.*?\)\s*->\s*[^`]+`", problem.statement):
            issues.append(f"{problem.key}: the statement has no signature with a return type for {name}()")
    return issues


def static_issues(problem: catalog.Problem) -> list[str]:
    issues = []
    p = problem.key
    for key in catalog.REQUIRED_KEYS:
        if problem.meta.get(key) in (None, "", []):
            issues.append(f"{p}: front matter lacks '{key}'")
    if problem.chapter not in catalog.CHAPTERS:
        issues.append(f"{p}: chapter must be one of {', '.join(catalog.CHAPTERS)}")
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


def _declaration_issues(problem: catalog.Problem) -> list[str]:
    from . import declaration
    if not problem.declaration_path.is_file():
        if problem.id in UNDECLARED:
            return []
        return [f"{problem.key}: no declare.py (see practice/README.md, 'Declarations')"]
    return declaration.issues(problem)


def check_all(keys: list[str] | None = None, lang: str = "zh", log=print,
              mutants: bool = False) -> tuple[list[str], int]:
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
        if not any("missing files" in i for i in found):
            found += signature_issues(problem) + input_check_issues(problem) + _declaration_issues(problem)
        log(f"{'ok  ' if not found else 'FAIL'} {problem.key}")
        issues.extend(found)
    for problem in problems:
        if problem.id in UNDECLARED and not problem.declaration_path.is_file():
            log(f"note {problem.key}: no declare.py yet (listed in checker.UNDECLARED)")
    for problem in problems:       # notes, not issues: cases waiting on something (e.g. sim's prefix cache)
        if problem.hidden_tests.is_file():
            for line in problem.hidden_tests.read_text(encoding="utf-8").splitlines():
                if "TODO(" in line:
                    log(f"note {problem.key}: {line.strip().lstrip('# ')}")
    if mutants:
        from . import mutants as mutation
        log("")
        scores = [mutation.check_problem(p) for p in problems
                  if not any("missing files" in i for i in static[p.key])]
        issues.extend(mutation.report(scores, log=log))
    return issues, len(problems)
