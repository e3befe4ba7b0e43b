"""pytest plugin of the judge's trusted process (copied in as ``conftest.py``).

The trusted process runs the problem's tests, the reference and every comparison, in a folder the
learner's code is never given. ``submission`` is a proxy (``judge_remote.make_proxy``) whose calls
run in the untrusted worker. This plugin:

- reads the run's key (one hex line on stdin) before anything else and signs every record it
  writes to the results pipe (``JUDGE_RESULTS_FD``) with it, so the parent accepts only its lines;
- after collection, starts the worker and imports the learner's file there;
- writes ``{"event": "collected", "cases": [...]}``, ``{"event": "import_error", ...}``,
  ``{"event": "start", "case": id}`` and ``{"event": "end", ...}`` records;
- enforces the per-case and whole-run limits through the worker manager;
- kills every process the worker started when the run ends.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import sys
import time

import pytest

import judge_remote as remote
from judgekit import Mismatch

KEY = bytes.fromhex(sys.stdin.readline().strip() or "00")
RESULTS_FD = int(os.environ.get("JUDGE_RESULTS_FD", "-1"))
CASE_LIMIT_S = float(os.environ.get("JUDGE_CASE_LIMIT_S", "5"))
RUN_LIMIT_S = float(os.environ.get("JUDGE_RUN_LIMIT_S", "60"))
MEMORY_MB = int(os.environ.get("JUDGE_MEMORY_MB", "1024"))
OUTPUT_LIMIT = int(os.environ.get("JUDGE_OUTPUT_LIMIT", "2048"))
SUBMISSION = os.environ.get("JUDGE_SUBMISSION", "")
PROTECTED = [p for p in os.environ.get("JUDGE_PROTECT", "").split(os.pathsep) if p]
STARTED = time.monotonic()

_state: dict = {"manager": None, "skip_all": False}


def _emit(record: dict) -> None:
    line = json.dumps(record, ensure_ascii=True, default=repr, allow_nan=True)
    mac = hmac.new(KEY, line.encode("ascii"), hashlib.sha256).hexdigest()
    view = memoryview((mac + " " + line + "\n").encode("ascii"))
    while view:  # os.write may write only part of it (a pipe near full): write the rest
        try:
            n = os.write(RESULTS_FD, view)
        except InterruptedError:
            continue
        except OSError:
            return
        view = view[n:]


def _cleanup(*_args) -> None:
    manager = _state.get("manager")
    if manager is not None:
        manager.stop()
    remote.kill_descendants()


def _on_term(signum, frame):
    _cleanup()
    os._exit(70)


def pytest_configure(config):
    try:
        sys.set_int_max_str_digits(10000)
    except AttributeError:
        pass
    remote.become_subreaper()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    with open(SUBMISSION, "rb") as fh:
        source = fh.read()
    limits = {"case_s": CASE_LIMIT_S, "run_s": RUN_LIMIT_S, "memory_mb": MEMORY_MB,
              "output_keep": OUTPUT_LIMIT * 4}
    manager = remote.Manager(source, limits, PROTECTED + [os.getcwd()], STARTED + RUN_LIMIT_S,
                             landlock=os.environ.get("JUDGE_NO_LANDLOCK") != "1")
    _state["manager"] = manager
    sys.modules["submission"] = remote.make_proxy(manager)


def pytest_collection_modifyitems(session, config, items):
    _emit({"event": "collected", "cases": [item.nodeid for item in items]})
    manager = _state["manager"]
    # The worker starts only now, after every test file has been read.
    try:
        manager.start()
    except remote.ImportFailed as exc:
        _emit_sandbox(manager)
        _emit({"event": "import_error", **exc.info})
        items[:] = []
        return
    _emit_sandbox(manager)


def _emit_sandbox(manager) -> None:
    if manager.landlock is not None:
        _emit({"event": "sandbox", "landlock": manager.landlock, "reason": manager.landlock_reason})


def pytest_unconfigure(config):
    _cleanup()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    manager = _state["manager"]
    if time.monotonic() > STARTED + RUN_LIMIT_S or _state["skip_all"]:
        code = "run_limit" if not _state["skip_all"] or _state["skip_all"] == "run" else "after_crash"
        _emit({"event": "end", "case": item.nodeid, "verdict": "skipped",
               "reason": {"code": code, "limit_s": RUN_LIMIT_S}, "time_s": 0.0})
        return True
    manager.start_case(item.nodeid)
    _emit({"event": "start", "case": item.nodeid})
    _state["done"] = False
    _run_item(item)
    if not _state["done"]:
        _emit({"event": "end", "case": item.nodeid, "verdict": "error",
               "reason": {"code": "internal"}, "time_s": 0.0})
    return True


def _run_item(item) -> None:
    from _pytest.runner import runtestprotocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runtestprotocol(item, nextitem=None, log=True)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _classify(exc) -> tuple[str, dict]:
    if isinstance(exc, Mismatch):
        return "wrong", {"code": exc.code, **exc.params}
    if isinstance(exc, remote.CaseTimeout):
        return "timeout", {"code": "timeout", "limit_s": CASE_LIMIT_S}
    if isinstance(exc, remote.FunctionHung):
        short = [c.split("::")[-1] for c in exc.cases]
        return "timeout", {"code": "timeout_hung", "name": exc.name, "n": len(short), "first": short[0],
                           "limit_s": CASE_LIMIT_S}
    if isinstance(exc, remote.RunOut):
        _state["skip_all"] = "run"
        return "timeout", {"code": "timeout", "limit_s": CASE_LIMIT_S}
    if isinstance(exc, remote.SkipRest):
        _state["skip_all"] = "crash"
        return "skipped", {"code": "after_crash"}
    if isinstance(exc, remote.MemoryLimit):
        return "memory", {"code": "memory_total", "limit_mb": exc.limit_mb}
    if isinstance(exc, remote.OutputLimit):
        return "error", {"code": "output_limit"}
    if isinstance(exc, remote.WorkerDied):
        code = exc.exit_code
        if code is not None and code < 0:
            reason = {"code": "signal", "signal": -code}
            if -code in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
                reason["maybe_memory"] = True
            return "error", reason
        return "error", {"code": "died", "exit_code": code}
    if isinstance(exc, remote.BadReply):
        return "error", {"code": "bad_reply"}
    if isinstance(exc, remote.ReturnTypeError):
        return "wrong", {"code": "return_type", "path": exc.path, "got": exc.type_name}
    if isinstance(exc, remote.NoFunction):
        return "wrong", {"code": "no_function", "name": exc.name}
    if isinstance(exc, remote.SubmissionError):
        info = exc.info
        base = info.get("base")
        if base == "NotImplementedError":
            return "error", {"code": "not_implemented", "line": info.get("line")}
        if base == "MemoryError":
            return "memory", {"code": "memory", "line": info.get("line")}
        if base == "SystemExit":
            return "error", {"code": "sys_exit", "exit_code": info.get("code"), "line": info.get("line")}
        return "error", {"code": "exception", "type": info.get("type"), "message": info.get("message"),
                         "line": info.get("line")}
    if isinstance(exc, AssertionError):
        return "wrong", {"code": "assert"}
    if isinstance(exc, pytest.fail.Exception):
        return "wrong", {"code": "assert"}
    # Anything else comes from the trusted side: a broken test or reference.
    return "error", {"code": "internal", "detail": f"{type(exc).__name__}: {exc}"[:300]}


def _json_safe(value, depth: int = 0):
    if depth > 6:
        return repr(value)[:200]
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, str) else value[:500]
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in list(value)[:50]]
    return repr(value)[:200]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" or _state.get("done"):
        return
    if call.when == "setup" and call.excinfo is None:
        return
    if call.excinfo is None:
        verdict, reason = "pass", {}
    else:
        verdict, reason = _classify(call.excinfo.value)
    manager = _state["manager"]
    record = {"event": "end", "case": item.nodeid, "verdict": verdict, "reason": reason,
              "time_s": round(manager.case_used if call.when == "call" else call.duration, 6)}
    output, chars = manager.case_output()
    if output:
        record["output"] = output[:OUTPUT_LIMIT]
        record["output_chars"] = chars
    example = getattr(item.module, "EXAMPLE", None) if item.module is not None else None
    if example is not None and item.module.__name__.endswith("test_example"):
        details = {"inputs": _json_safe({"function": example.get("function"),
                                         "args": example.get("args", []),
                                         "kwargs": example.get("kwargs", {})})}
        exc = call.excinfo.value if call.excinfo is not None else None
        if isinstance(exc, Mismatch) and exc.expected is not None:
            details["expected"] = _json_safe(exc.expected)
            details["got"] = _json_safe(exc.got)
        elif call.excinfo is not None:
            details["expected"] = _json_safe(example.get("expected"))
        record["details"] = details
    _emit(record)
    _state["done"] = True
