"""Mutation check of the hidden tests (``judge.py check --mutants``): are the tests sharp?

Each reference solution is mutated at one point at a time (an arithmetic or comparison operator
swapped, an integer or float constant shifted by one (a float above 1e6 by a millionth of
itself), ``min``/``max`` or ``floor``/``ceil`` swapped), and
every mutant is judged by the problem's tests. A mutant that fails a case (wrong answer, error,
timeout) is *caught*; one that passes every case *survives*. A survivor that no input can tell
apart from the reference is listed in the problem's ``equivalent_mutants.txt`` (one line each:
the mutant's id, then the reason) and is left out of the score.

Speed without weakening the learners' judge: mutants are *our* code, so they are judged in
process, not in the sandbox. The tests are imported once per problem, with ``submission`` a proxy
that sends every call's arguments and result through the judge's own plain-data codec (so a
mutant sees copies, as the learner's code does in the worker). Each mutant runs in a forked child
(a pool of ``os.cpu_count()`` at a time) with a memory cap and a wall-clock limit, and stops at its
first failing case. The learners' path (``runner.py``, the sandbox) is not touched.

The same in-process run of the reference records every ``expect_value_error`` field, which the
maintainer check compares with each statement's input-check section (``validated_fields``).
"""
from __future__ import annotations

import ast
import copy
import difflib
import hashlib
import importlib.util
import itertools
import os
import random
import resource
import select
import signal
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

from . import catalog
from .runner import SANDBOX

EQUIVALENT_FILE = "equivalent_mutants.txt"
MAX_MUTANTS = 240          # per problem; above it a fixed-seed sample is judged
SAMPLE_SEED = 12
MEMORY_CAP_BYTES = 4 << 30
MIN_LIMIT_S = 1.5          # a mutant's wall-clock limit: max(MIN_LIMIT_S, SLOWDOWN x the reference)
SLOWDOWN = 20.0


# --- making mutants -------------------------------------------------------------------------

_BINOP_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}
_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_CALL_SWAP = {"min": "max", "max": "min", "floor": "ceil", "ceil": "floor"}


@dataclass
class Mutant:
    id: str                    # stable: hash of (function, statement, old -> new, occurrence)
    function: str
    description: str           # "old -> new" of the mutated expression
    source: str
    diff: str = field(repr=False, default="")


def _parents(tree: ast.AST) -> dict:
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    return parent


def _skipped(node, parent) -> bool:
    """Inside a docstring, an f-string, a ``raise`` (error messages) or an annotation."""
    while node in parent:
        up = parent[node]
        if isinstance(up, (ast.JoinedStr, ast.Raise)):
            return True
        if isinstance(up, (ast.arg, ast.FunctionDef)) and getattr(up, "returns", None) is node:
            return True
        node = up
    return False


def _context(node, parent):
    """(enclosing function name, enclosing statement's text)."""
    stmt, func = None, "<module>"
    cur = node
    while cur in parent:
        cur = parent[cur]
        if stmt is None and isinstance(cur, ast.stmt) and not isinstance(cur, (ast.FunctionDef, ast.ClassDef)):
            stmt = cur
        if isinstance(cur, ast.FunctionDef):
            func = cur.name
            break
    text = ast.unparse(stmt).splitlines()[0] if stmt is not None else ""
    return func, text


def _edits(node):
    """The mutations of one node: a list of (describe, apply) where apply() mutates in place and
    returns an undo function."""
    out = []
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SWAP:
        old = node.op

        def apply(node=node, old=old):
            node.op = _BINOP_SWAP[type(old)]()
            return lambda: setattr(node, "op", old)
        out.append(apply)
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMP_SWAP:
                def apply(node=node, i=i, op=op):
                    node.ops[i] = _CMP_SWAP[type(op)]()
                    return lambda: node.ops.__setitem__(i, op)
                out.append(apply)
    elif isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in _CALL_SWAP and (isinstance(f, ast.Name) or (isinstance(f.value, ast.Name) and f.value.id == "math")):
            def apply(f=f, name=name):
                attr = "id" if isinstance(f, ast.Name) else "attr"
                setattr(f, attr, _CALL_SWAP[name])
                return lambda: setattr(f, attr, name)
            out.append(apply)
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        old = node.value

        def apply(node=node, old=old):
            # off by one; a large float (a unit such as 1e9) off by a millionth of itself
            node.value = old + 1 if type(old) is int or abs(old) <= 1e6 else old * (1 + 1e-6)
            return lambda: setattr(node, "value", old)
        out.append(apply)
    return out


def _expr_text(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return type(node).__name__


def make_mutants(source: str, filename: str = "solution.py") -> list[Mutant]:
    """Every single-point mutant of ``source``, in source order, each with a stable id."""
    tree = ast.parse(source)
    parent = _parents(tree)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    base = ast.unparse(tree)
    seen: dict[str, int] = {}
    mutants = []
    nodes = sorted((n for n in ast.walk(tree) if hasattr(n, "lineno")),
                   key=lambda n: (n.lineno, n.col_offset, -(getattr(n, "end_col_offset", 0) or 0)))
    for node in nodes:
        if id(node) in docstrings or _skipped(node, parent):
            continue
        for apply in _edits(node):
            before = _expr_text(node)
            func, stmt = _context(node, parent)
            undo = apply()
            after = _expr_text(node)
            mutated = ast.unparse(tree)
            undo()
            desc = f"{before.splitlines()[0]}  ->  {after.splitlines()[0]}"
            key = f"{func}|{stmt}|{desc}"
            k = seen.get(key, 0)
            seen[key] = k + 1
            mid = hashlib.sha1(f"{key}|{k}".encode()).hexdigest()[:10]
            diff = "".join(difflib.unified_diff(base.splitlines(True), mutated.splitlines(True),
                                                filename, filename + " (mutant)", n=1))
            mutants.append(Mutant(mid, func, desc, mutated, diff))
    return mutants


def read_equivalent(folder: Path) -> dict[str, str]:
    """``equivalent_mutants.txt``: ``<id> <reason>`` per line; ``#`` starts a comment."""
    path = folder / EQUIVALENT_FILE
    out = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            mid, _, reason = line.partition(" ")
            out[mid] = reason.strip()
    return out


# --- running a problem's tests in process ---------------------------------------------------

def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Current:
    module = None


def _proxy(codec):
    """``submission``: calls go to ``_Current.module`` with arguments and results copied through
    the judge's plain-data codec."""
    module = types.ModuleType("submission")

    def __getattr__(name):
        target = getattr(_Current.module, name, None)
        if target is None or not callable(target):
            raise AttributeError(name)

        def call(*args, **kwargs):
            args = codec.decode(codec.encode(list(args)))
            kwargs = codec.decode(codec.encode(dict(kwargs)))
            return codec.decode(codec.encode(target(*args, **kwargs)))
        call.__name__ = name
        return call

    module.__getattr__ = __getattr__
    return module


def _cases(module) -> list[tuple[str, object, dict]]:
    """(case id, function, kwargs) for every test function, parametrizations expanded, in the
    order pytest runs them (definition order)."""
    out = []
    funcs = [(n, f) for n, f in vars(module).items() if n.startswith("test") and callable(f)
             and getattr(f, "__module__", None) == module.__name__]
    funcs.sort(key=lambda nf: nf[1].__code__.co_firstlineno)
    for name, fn in funcs:
        grids = []
        for mark in reversed(getattr(fn, "pytestmark", [])):
            if mark.name != "parametrize":
                continue
            names, values = mark.args[0], mark.args[1]
            names = [s.strip() for s in names.split(",")] if isinstance(names, str) else list(names)
            rows = []
            for v in values:
                v = getattr(v, "values", v)
                rows.append(dict(zip(names, v if len(names) > 1 else (v,))))
            grids.append(rows)
        if not grids:
            out.append((name, fn, {}))
            continue
        for i, combo in enumerate(itertools.product(*grids)):
            kwargs = {}
            for part in combo:
                kwargs.update(part)
            out.append((f"{name}[{i}]", fn, kwargs))
    return out


class Suite:
    """A problem's tests, imported once in this process, runnable against any module."""

    def __init__(self, problem: catalog.Problem):
        self.problem = problem
        codec = _load(SANDBOX / "judge_remote.py", "judge_remote")
        kit = _load(SANDBOX / "judgekit.py", "judgekit")
        self.fields: list[tuple[str, str]] = []     # (function, field) of every expect_value_error
        original = kit.expect_value_error
        fields = self.fields

        def recording(fn, *args, field, **kwargs):
            fields.append((getattr(fn, "__name__", "?"), field))
            return original(fn, *args, field=field, **kwargs)
        kit.expect_value_error = recording
        tag = f"{problem.id}"
        self.reference = _load(problem.solution_path, f"reference_{tag}")
        sys.modules["reference"] = self.reference
        sys.modules["submission"] = _proxy(codec)
        self.cases = []
        paths = [problem.example_tests, problem.hidden_tests]
        sys.modules.pop("declare", None)            # never another problem's declaration
        if problem.declaration_path.is_file():      # the generated cases, from the same declaration
            _load(SANDBOX / "declkit.py", "declkit")
            _load(problem.declaration_path, "declare")
            paths.append(SANDBOX / "test_declared.py")
        for path in paths:
            module = _load(path, f"_mut_{tag}_{path.stem}")
            self.cases += [(f"{path.name}::{cid}", fn, kw) for cid, fn, kw in _cases(module)]
            if path.stem == "test_declared":
                fields += [(c.function, f) for c in module.CASES for _, _, expect, f in c.variants
                           if expect != "accept"]

    def run(self, module, stop_at_first: bool = True) -> list[tuple[str, str]]:
        """Failures as (case, why); [] when every case passes."""
        import pytest
        _Current.module = module
        failed = []
        for cid, fn, kwargs in self.cases:
            try:
                fn(**copy.deepcopy(kwargs))
            except pytest.skip.Exception:
                continue
            except BaseException as exc:  # noqa: BLE001 - any failure catches the mutant
                if isinstance(exc, KeyboardInterrupt):
                    raise
                failed.append((cid, f"{type(exc).__name__}: {str(exc)[:200]}"))
                if stop_at_first:
                    break
        return failed


def _module_from(source: str, name: str):
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own reference, mutated
    return module


def validated_fields(problem: catalog.Problem) -> tuple[set[str], list[str]]:
    """Fields the hidden tests check with ``expect_value_error`` (from an in-process run of the
    reference), and the failures of that run (should be none)."""
    suite = Suite(problem)
    failures = suite.run(suite.reference, stop_at_first=False)
    return {f for _, f in suite.fields}, [f"{c}: {w}" for c, w in failures]


# --- judging mutants ------------------------------------------------------------------------

@dataclass
class ProblemScore:
    key: str
    total: int = 0             # mutants made
    judged: int = 0            # judged (all, or a sample)
    caught: int = 0
    equivalent: list[Mutant] = field(default_factory=list)
    survivors: list[Mutant] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)   # equivalent ids that match no mutant, or are caught
    timeouts: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def score(self) -> float:
        live = self.judged - len(self.equivalent)
        return 1.0 if live <= 0 else self.caught / live


def _child(suite: Suite, mutant: Mutant, write_fd: int) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))
    except (ValueError, OSError):
        pass
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    code = 3
    try:
        module = _module_from(mutant.source, "submission")
        failed = suite.run(module)
        code = 1 if failed else 0
        os.write(write_fd, (failed[0][0] if failed else "").encode()[:400])
    except BaseException:  # noqa: BLE001 - e.g. the mutant does not even import
        code = 1
    os._exit(code)


def judge_mutants(suite: Suite, mutants: list[Mutant], limit_s: float, workers: int) -> dict[str, str]:
    """mutant id -> "caught" / "survived" / "timeout", forking one child per mutant."""
    results: dict[str, str] = {}
    pending = list(mutants)
    running: dict[int, tuple[Mutant, int, float]] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    while pending or running:
        while pending and len(running) < workers:
            mutant = pending.pop(0)
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _child(suite, mutant, write_fd)
            os.close(write_fd)
            running[pid] = (mutant, read_fd, time.monotonic() + limit_s)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for cpid, (mutant, fd, deadline) in list(running.items()):
                if now > deadline:
                    try:
                        os.kill(cpid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(cpid, 0)
                    os.close(fd)
                    results[mutant.id] = "timeout"
                    del running[cpid]
            if running:
                select.select([fd for _, fd, _ in running.values()], [], [], 0.005)
            continue
        if pid not in running:
            continue
        mutant, fd, _ = running.pop(pid)
        os.close(fd)
        code = os.waitstatus_to_exitcode(status)
        results[mutant.id] = "survived" if code == 0 else "caught"
    return results


def check_problem(problem: catalog.Problem, workers: int | None = None) -> ProblemScore:
    started = time.monotonic()
    score = ProblemScore(problem.key)
    try:
        suite = Suite(problem)
    except Exception as exc:  # noqa: BLE001
        score.error = f"cannot import the tests in process: {type(exc).__name__}: {exc}"
        return score
    t0 = time.monotonic()
    failures = suite.run(suite.reference, stop_at_first=False)
    ref_s = time.monotonic() - t0
    if failures:
        score.error = f"the reference fails in process: {failures[0][0]}: {failures[0][1]}"
        return score
    source = problem.solution_path.read_text(encoding="utf-8")
    every = make_mutants(source)
    all_ids = {m.id for m in every}
    score.total = len(every)
    mutants = every
    if len(every) > MAX_MUTANTS:
        picked = sorted(random.Random(SAMPLE_SEED).sample(range(len(every)), MAX_MUTANTS))
        mutants = [every[i] for i in picked]
    score.judged = len(mutants)
    equivalent = read_equivalent(problem.folder)
    limit = max(MIN_LIMIT_S, SLOWDOWN * ref_s)
    results = judge_mutants(suite, mutants, limit, workers or max(1, os.cpu_count() or 1))
    for mutant in mutants:
        verdict = results.get(mutant.id, "caught")
        if verdict == "timeout":
            score.timeouts += 1
        if mutant.id in equivalent:
            if verdict == "survived":
                score.equivalent.append(mutant)
            else:
                score.stale.append(f"{mutant.id} is listed as equivalent but is caught")
                score.caught += 1
            continue
        if verdict == "survived":
            score.survivors.append(mutant)
        else:
            score.caught += 1
    for mid in equivalent:
        if mid not in all_ids:
            score.stale.append(f"{mid} is listed as equivalent but matches no mutant")
    score.seconds = time.monotonic() - started
    return score


TARGET = 0.95


def report(scores: list[ProblemScore], log=print, show_diffs: int = 6) -> list[str]:
    """Print the table and survivors; return issues (problems under the target, stale entries)."""
    issues = []
    log(f"{'problem':<34} {'mutants':>7} {'judged':>6} {'caught':>6} {'equiv':>5} {'score':>6} {'time':>6}")
    for s in scores:
        if s.error:
            log(f"{s.key:<34} ERROR {s.error}")
            issues.append(f"{s.key}: mutants: {s.error}")
            continue
        log(f"{s.key:<34} {s.total:>7} {s.judged:>6} {s.caught:>6} {len(s.equivalent):>5} "
            f"{s.score:>6.1%} {s.seconds:>5.1f}s")
        if s.score < TARGET:
            issues.append(f"{s.key}: mutants: {s.score:.1%} caught, under {TARGET:.0%} "
                          f"({len(s.survivors)} survive)")
        issues.extend(f"{s.key}: {entry}" for entry in s.stale)
    for s in scores:
        for mutant in s.survivors[:show_diffs]:
            log(f"\n--- survivor {s.key} {mutant.id} in {mutant.function}(): {mutant.description}")
            log(mutant.diff.rstrip())
        if len(s.survivors) > show_diffs:
            log(f"... and {len(s.survivors) - show_diffs} more survivors in {s.key}")
    return issues
