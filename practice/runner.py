"""Run a problem's tests against one file in a sandboxed child process.

The learner's file is copied as ``submission.py`` into a fresh temporary folder, together with
the reference (as ``reference.py``, for tests that compare random inputs with it), the problem's
test files, ``judgekit.py`` and the plugin (as ``conftest.py``). The child is ``python -m pytest``
in that folder with:

- its own process group, killed as a whole on the run's wall-clock limit;
- ``RLIMIT_AS`` (the memory cap), ``RLIMIT_FSIZE`` (so endless printing stops), one BLAS thread;
- a per-case alarm in the child and a watchdog in the parent (in case the alarm is swallowed or
  a C extension blocks signals).

The plugin writes a JSON line per event. If the child dies inside a case, that case gets a
verdict from what the parent saw, and a new child runs the cases that are left (a few times at
most). Nothing the learner's code does makes this function raise or hang.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .verdicts import CaseResult, Report

SANDBOX = Path(__file__).resolve().parent / "sandbox"
MAX_RESTARTS = 3
OUTPUT_LIMIT_CHARS = 2048
FILE_SIZE_LIMIT = 64 * 1024 * 1024


@dataclass
class Limits:
    case_s: float = 5.0
    run_s: float = 60.0
    memory_mb: int = 1024


@dataclass
class _State:
    cases: list[str] | None = None
    done: dict[str, CaseResult] = field(default_factory=dict)
    import_error: dict | None = None
    run_out: bool = False


def _preexec(memory_mb: int):
    def apply() -> None:
        limit = memory_mb * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):
            pass
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
        except (ValueError, OSError):
            pass
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ValueError, OSError):
            pass
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return apply


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _read_records(path: Path, offset: int) -> tuple[list[dict], int]:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], offset
    records = []
    consumed = 0
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break  # a partial last line: read it next time
        consumed += len(raw)
        try:
            records.append(json.loads(raw.decode("utf-8", "replace")))
        except json.JSONDecodeError:
            continue
    return records, offset + consumed


def _tail(path: Path, limit: int = 1500) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _prepare(work: Path, submission: Path, reference: Path, tests: list[Path]) -> None:
    shutil.copyfile(submission, work / "submission.py")
    shutil.copyfile(reference, work / "reference.py")
    shutil.copyfile(SANDBOX / "judgekit.py", work / "judgekit.py")
    shutil.copyfile(SANDBOX / "judge_plugin.py", work / "conftest.py")
    (work / "pytest.ini").write_text("[pytest]\naddopts =\n", encoding="utf-8")
    for test in tests:
        shutil.copyfile(test, work / test.name)


def _child_env(work: Path, results: Path, skip: Path, limits: Limits) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "JUDGE_", "COV_", "PYTHON"))}
    env.update({
        "JUDGE_RESULTS": str(results),
        "JUDGE_SKIP": str(skip),
        "JUDGE_CASE_LIMIT_S": repr(limits.case_s),
        "JUDGE_OUTPUT_LIMIT": str(OUTPUT_LIMIT_CHARS),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TMPDIR": str(work),
    })
    return env


def _run_child(work: Path, state: _State, limits: Limits, deadline: float,
               selection: list[str] | None) -> None:
    """One child process: run the cases not done yet; fold its records into ``state``."""
    results = work / "results.jsonl"
    skip = work / "skip.txt"
    results.write_bytes(b"")
    skip.write_text("\n".join(state.done), encoding="utf-8")
    log = work / "child.log"
    cmd = [sys.executable, "-X", "utf8", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--show-capture=no", "--tb=no", "--no-header", "-rN", "--color=no"]
    cmd += selection if selection else ["."]
    with open(log, "wb") as log_fh:
        proc = subprocess.Popen(cmd, cwd=work, env=_child_env(work, results, skip, limits),
                                stdin=subprocess.DEVNULL, stdout=log_fh, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_preexec(limits.memory_mb))
        offset = 0
        current: str | None = None
        current_since = 0.0
        killed_for: str | None = None

        def absorb() -> None:
            nonlocal offset, current, current_since
            records, offset = _read_records(results, offset)
            for rec in records:
                event = rec.get("event")
                if event == "collected" and state.cases is None:
                    state.cases = list(rec.get("cases", []))
                elif event == "import_error":
                    state.import_error = rec
                elif event == "start":
                    current, current_since = rec.get("case"), time.monotonic()
                elif event == "end":
                    case = rec.get("case")
                    if case and case not in state.done:
                        state.done[case] = CaseResult.from_record(rec)
                    current = None

        while True:
            try:
                proc.wait(timeout=0.02)
                break
            except subprocess.TimeoutExpired:
                pass
            absorb()
            now = time.monotonic()
            if now > deadline:
                killed_for = "run"
                _kill_group(proc)
                break
            if current is not None and now - current_since > limits.case_s + 2.5:
                killed_for = "case"
                _kill_group(proc)
                break
        absorb()
    # The group may still hold grandchildren the learner started; end them too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if current is not None and current not in state.done:
        if killed_for in ("case", "run"):
            state.done[current] = CaseResult(current, "timeout",
                                             {"code": "timeout", "limit_s": limits.case_s}, limits.case_s)
        else:
            rc = proc.returncode
            reason = {"code": "died", "exit_code": rc}
            if rc is not None and rc < 0:
                reason = {"code": "signal", "signal": -rc}
                if -rc in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
                    reason["maybe_memory"] = True
            state.done[current] = CaseResult(current, "error", reason,
                                             time.monotonic() - current_since)
    state_log = _tail(log)
    if state.cases is None and state.import_error is None:
        kind = "run_timeout" if killed_for else "no_collect"
        state.import_error = {"event": "import_error", "kind": kind, "exit_code": proc.returncode,
                              "log": state_log}
    elif killed_for == "run":
        state.run_out = True


def judge_file(submission: Path, reference: Path, tests: list[Path], limits: Limits | None = None,
               selection: list[str] | None = None) -> Report:
    """Judge ``submission`` with the given test files. Never raises for anything in the file."""
    limits = limits or Limits()
    submission = Path(submission)
    started = time.monotonic()
    try:
        source = submission.read_bytes()
    except OSError as exc:
        return Report.cannot_judge({"kind": "unreadable", "message": str(exc)})
    try:
        compile(source, "submission.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return Report.cannot_judge({"kind": "syntax", "line": exc.lineno,
                                    "message": exc.msg or "", "text": (exc.text or "").rstrip()})
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes
        return Report.cannot_judge({"kind": "syntax", "line": None, "message": str(exc), "text": ""})

    work = Path(tempfile.mkdtemp(prefix="practice-judge-"))
    state = _State()
    try:
        _prepare(work, submission, Path(reference), [Path(t) for t in tests])
        deadline = started + limits.run_s
        names = [Path(t).name for t in tests]
        sel = selection or names
        for _ in range(MAX_RESTARTS + 1):
            before = len(state.done)
            _run_child(work, state, limits, deadline, sel)
            if state.import_error is not None or state.cases is None:
                break
            if state.run_out or all(c in state.done for c in state.cases):
                break
            if len(state.done) == before:
                break
        if state.import_error is not None:
            return Report.cannot_judge(state.import_error, elapsed_s=time.monotonic() - started)
        cases = state.cases or []
        results = []
        for case in cases:
            if case in state.done:
                results.append(state.done[case])
            elif state.run_out:
                results.append(CaseResult(case, "skipped", {"code": "run_limit",
                                                            "limit_s": limits.run_s}, 0.0))
            else:
                results.append(CaseResult(case, "skipped", {"code": "after_crash"}, 0.0))
        if not results:
            return Report.cannot_judge({"kind": "no_cases"}, elapsed_s=time.monotonic() - started)
        return Report(results, elapsed_s=time.monotonic() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
