"""Run a problem's tests against one file: trusted tests in one process, the learner's code in another.

The parent (this module) starts the **trusted process**: ``python -m pytest`` in a fresh private
folder with the problem's tests, the reference (``reference.py``), ``judgekit.py``,
``judge_remote.py`` and the plugin (as ``conftest.py``). The learner's file is never put there;
the tests' ``submission`` module is a proxy whose calls run in the **untrusted worker**, a third
process that only has the learner's file in an empty folder (see ``sandbox/worker.py``).

The trusted process signs each record it writes to a pipe with a key it read from its stdin; the
parent ignores anything else. The parent also keeps a copy of the problem's files and checks them
after the run (a changed file is restored and the run is not counted), and kills the trusted
process on the run's wall-clock limit (it sends SIGTERM first so that the trusted process kills
every process the worker started). Nothing the learner's code does makes this function raise or
hang.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import select
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
PACKAGE = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE.parent
_SKIP_PARTS = {"__pycache__", "workspace", ".ipynb_checkpoints"}
OUTPUT_LIMIT_CHARS = 2048
HARD_MARGIN_S = 10.0


@dataclass
class Limits:
    case_s: float = 5.0
    run_s: float = 60.0
    memory_mb: int = 1024

    def __post_init__(self) -> None:
        for name in ("case_s", "run_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not 0 < value <= 3600:
                raise ValueError(f"Limits.{name} must be a finite number of seconds in (0, 3600], got {value!r}")
        if isinstance(self.memory_mb, bool) or not isinstance(self.memory_mb, int) \
                or not 64 <= self.memory_mb <= 1 << 20:
            raise ValueError(f"Limits.memory_mb must be an integer in [64, 1048576], got {self.memory_mb!r}")


@dataclass
class _State:
    cases: list[str] | None = None
    done: dict[str, CaseResult] = field(default_factory=dict)
    import_error: dict | None = None
    sandbox: dict | None = None
    current: str | None = None


def _prepare(work: Path, submission: bytes, reference: Path, tests: list[Path]) -> None:
    (work / "submission.src").write_bytes(submission)
    shutil.copyfile(reference, work / "reference.py")
    for name in ("judgekit.py", "judge_remote.py", "declkit.py"):
        shutil.copyfile(SANDBOX / name, work / name)
    declaration = reference.parent / "declare.py"
    if declaration.is_file():      # the generated cases (test_declared.py) read it
        shutil.copyfile(declaration, work / "declare.py")
    shutil.copyfile(SANDBOX / "judge_plugin.py", work / "conftest.py")
    (work / "pytest.ini").write_text("[pytest]\naddopts =\n", encoding="utf-8")
    for test in tests:
        shutil.copyfile(test, work / test.name)


def _child_env(work: Path, limits: Limits, results_fd: int, protect: list[Path]) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "JUDGE_", "COV_", "PYTHON"))}
    env.update({
        "JUDGE_RESULTS_FD": str(results_fd),
        "JUDGE_CASE_LIMIT_S": repr(float(limits.case_s)),
        "JUDGE_RUN_LIMIT_S": repr(float(limits.run_s)),
        "JUDGE_MEMORY_MB": str(int(limits.memory_mb)),
        "JUDGE_OUTPUT_LIMIT": str(OUTPUT_LIMIT_CHARS),
        "JUDGE_SUBMISSION": str(work / "submission.src"),
        "JUDGE_WORKER_SOURCE": str(SANDBOX / "worker.py"),
        "JUDGE_PROTECT": os.pathsep.join(str(p) for p in protect),
        "JUDGE_NO_LANDLOCK": "1" if os.environ.get("PRACTICE_NO_LANDLOCK") == "1" else "0",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    })
    return env


def _verify(key: bytes, raw: bytes) -> dict | None:
    """One signed line from the trusted process, or None if it is not one."""
    mac, sep, body = raw.rstrip(b"\n").partition(b" ")
    if not sep or not hmac.compare_digest(mac, hmac.new(key, body, hashlib.sha256).hexdigest().encode()):
        return None
    try:
        record = json.loads(body.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _absorb(state: _State, record: dict) -> None:
    event = record.get("event")
    if event == "collected" and state.cases is None:
        cases = record.get("cases")
        state.cases = [str(c) for c in cases] if isinstance(cases, list) else []
    elif event == "import_error":
        state.import_error = record
    elif event == "sandbox":
        state.sandbox = {"landlock": str(record.get("landlock")), "reason": record.get("reason")}
    elif event == "start":
        state.current = str(record.get("case"))
    elif event == "end":
        case = str(record.get("case"))
        if case not in state.done:
            state.done[case] = CaseResult.from_record(record)
        state.current = None


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (the trusted process then kills the worker's processes), then SIGKILL."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=3)
        except (subprocess.TimeoutExpired, OSError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _run_trusted(work: Path, state: _State, limits: Limits, protect: list[Path],
                 selection: list[str]) -> str | None:
    """Run the trusted process to its end; fold its records into ``state``. Returns why it was
    stopped early ("run") or None."""
    read_fd, write_fd = os.pipe()
    key = secrets.token_bytes(32)
    log = work / "trusted.log"
    cmd = [sys.executable, "-X", "utf8", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--show-capture=no", "--tb=no", "--no-header", "-rN", "--color=no", "-s", *selection]
    killed_for = None
    try:
        with open(log, "wb") as log_fh:
            proc = subprocess.Popen(cmd, cwd=work, env=_child_env(work, limits, write_fd, protect),
                                    stdin=subprocess.PIPE, stdout=log_fh, stderr=subprocess.STDOUT,
                                    pass_fds=(write_fd,), start_new_session=True)
    finally:
        os.close(write_fd)
    try:
        try:
            proc.stdin.write(key.hex().encode() + b"\n")
            proc.stdin.close()
        except OSError:
            pass
        hard_deadline = time.monotonic() + limits.run_s + HARD_MARGIN_S
        try:
            killed_for = _read_records(proc, read_fd, key, state, hard_deadline)
        except KeyboardInterrupt:          # Ctrl-C: stop now, keep what was judged
            killed_for = "interrupted"
        if proc.poll() is None and killed_for != "interrupted":
            try:
                proc.wait(timeout=HARD_MARGIN_S)
            except subprocess.TimeoutExpired:
                killed_for = killed_for or "run"
    finally:
        _stop(proc)  # also on a second KeyboardInterrupt: nothing is left running
        os.close(read_fd)
    if state.cases is None and state.import_error is None and killed_for != "interrupted":
        tail = log.read_bytes()[-1500:].decode("utf-8", "replace") if log.exists() else ""
        state.import_error = {"event": "import_error", "kind": "run_timeout" if killed_for else "internal",
                              "exit_code": proc.returncode, "log": tail}
    return killed_for


def _read_records(proc, read_fd: int, key: bytes, state: _State, hard_deadline: float) -> str | None:
    """Fold the trusted process's signed records into ``state`` until its pipe closes; "run" when
    the hard deadline passed first (the process is then stopped)."""
    pending = b""
    while True:
        left = hard_deadline - time.monotonic()
        if left <= 0:
            _stop(proc)
            return "run"
        ready, _, _ = select.select([read_fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            return None
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            record = _verify(key, raw)
            if record is None:                 # not signed with this run's key: ignored
                continue
            _absorb(state, record)


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
        return True
    except ValueError:
        return False


def _guarded_files(folder: Path):
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).parts
        if not _SKIP_PARTS.intersection(rel) and path.is_file():
            yield path


def _snapshot(folder: Path) -> dict[Path, bytes]:
    files = {}
    for path in _guarded_files(folder):
        try:
            files[path] = path.read_bytes()
        except OSError:
            pass
    return files


def _restore(snapshot: dict[Path, bytes], folder: Path) -> bool:
    """Put back any file of ``snapshot`` that changed or went; True if one had. (New files are left
    alone: the judge only ever reads the files it knows.)"""
    changed = False
    for path, data in snapshot.items():
        try:
            same = path.read_bytes() == data
        except OSError:
            same = False
        if not same:
            changed = True
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            except OSError:
                pass
    return changed


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

    reference = Path(reference)
    # The judge's own package (problems, sandbox, code), and the problem's folder if it is
    # elsewhere: a submission that changes them (possible only without Landlock) is caught here.
    guarded = [PACKAGE] + ([reference.parent] if not _inside(reference.parent, PACKAGE) else [])
    snapshots = [(folder, _snapshot(folder)) for folder in guarded]
    work = Path(tempfile.mkdtemp(prefix="practice-judge-"))
    state = _State()
    try:
        _prepare(work, source, reference, [Path(t) for t in tests])
        sel = selection or [Path(t).name for t in tests]
        protect = [PROJECT_ROOT, reference.parent, work]
        killed_for = _run_trusted(work, state, limits, protect, sel)
        tampered = any([_restore(snap, folder) for folder, snap in snapshots])
        elapsed = time.monotonic() - started
        if tampered:
            return Report.cannot_judge({"kind": "tampered"}, elapsed_s=elapsed, sandbox=state.sandbox)
        if state.import_error is not None and killed_for != "interrupted":
            info = {k: v for k, v in state.import_error.items() if k != "event"}
            return Report.cannot_judge(info, elapsed_s=elapsed, sandbox=state.sandbox)
        results = []
        interrupted = killed_for == "interrupted"
        for case in state.cases or []:
            if case in state.done:
                results.append(state.done[case])
            elif interrupted:
                results.append(CaseResult(case, "skipped", {"code": "interrupted"}, 0.0))
            elif case == state.current:
                results.append(CaseResult(case, "timeout" if killed_for else "error",
                                          {"code": "timeout", "limit_s": limits.case_s} if killed_for
                                          else {"code": "internal"}, 0.0))
            elif killed_for == "run":
                results.append(CaseResult(case, "skipped", {"code": "run_limit",
                                                            "limit_s": limits.run_s}, 0.0))
            else:
                results.append(CaseResult(case, "skipped", {"code": "after_crash"}, 0.0))
        if not results and not interrupted:
            return Report.cannot_judge({"kind": "no_cases"}, elapsed_s=elapsed, sandbox=state.sandbox)
        return Report(results, elapsed_s=elapsed, sandbox=state.sandbox, interrupted=interrupted)
    finally:
        shutil.rmtree(work, ignore_errors=True)
