"""pytest plugin that runs inside the judge's child process (copied in as ``conftest.py``).

It imports the learner's ``submission`` module under a time limit before anything else, then
writes one JSON line per event to the results file named by ``JUDGE_RESULTS``:

- ``{"event": "import_error", ...}`` when importing the submission fails (nothing is judged);
- ``{"event": "collected", "cases": [...]}`` with every case's node id;
- ``{"event": "start", "case": id}`` before a case and ``{"event": "end", ...}`` after it.

Each line is flushed and fsynced before the case goes on, so the parent can tell which case was
running when the process died (``os._exit``, a crash, the memory cap, a kill on timeout).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

import pytest

RESULTS = os.environ.get("JUDGE_RESULTS", "")
CASE_LIMIT_S = float(os.environ.get("JUDGE_CASE_LIMIT_S", "5"))
OUTPUT_LIMIT = int(os.environ.get("JUDGE_OUTPUT_LIMIT", "2048"))
SKIP_FILE = os.environ.get("JUDGE_SKIP", "")
SUBMISSION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "submission.py")

_out = None


class CaseTimeout(BaseException):
    """Raised by the alarm when a case runs past its limit (a BaseException so that a learner's
    ``except Exception`` does not swallow it)."""


def _emit(record: dict) -> None:
    global _out
    if _out is None:
        _out = open(RESULTS, "a", encoding="utf-8")
    _out.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
    _out.flush()
    try:
        os.fsync(_out.fileno())
    except OSError:
        pass


def _learner_line(tb) -> int | None:
    line = None
    for frame in traceback.extract_tb(tb):
        if os.path.abspath(frame.filename) == SUBMISSION:
            line = frame.lineno
    return line


def _short(text: str, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _describe_exception(exc: BaseException, tb) -> dict:
    return {"type": type(exc).__name__, "message": _short(exc), "line": _learner_line(tb)}


def _arm(limit: float) -> None:
    fired = {"n": 0}

    def on_alarm(signum, frame):
        fired["n"] += 1
        if fired["n"] == 1:
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            raise CaseTimeout()
        # The learner's code swallowed the first alarm: give up on this process.
        _emit({"event": "end", "case": _current.get("case"), "verdict": "timeout",
               "reason": {"code": "timeout", "limit_s": limit}, "time_s": limit})
        os._exit(75)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)


_current: dict = {}


def pytest_configure(config):
    try:
        sys.set_int_max_str_digits(10000)
    except AttributeError:
        pass
    try:
        _arm(CASE_LIMIT_S)
        try:
            import submission  # noqa: F401  (the learner's file)
        finally:
            _disarm()
    except CaseTimeout:
        _emit({"event": "import_error", "kind": "timeout", "limit_s": CASE_LIMIT_S})
        os._exit(0)
    except SystemExit as exc:
        _emit({"event": "import_error", "kind": "exit", "code": _short(exc.code)})
        os._exit(0)
    except MemoryError as exc:
        _emit({"event": "import_error", "kind": "memory"})
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - anything the learner's module raises
        info = _describe_exception(exc, exc.__traceback__)
        if isinstance(exc, SyntaxError):
            info["line"] = exc.lineno
        _emit({"event": "import_error", "kind": "exception", **info})
        os._exit(0)


def pytest_collection_modifyitems(session, config, items):
    _emit({"event": "collected", "cases": [item.nodeid for item in items]})
    skip = set()
    if SKIP_FILE and os.path.exists(SKIP_FILE):
        with open(SKIP_FILE, encoding="utf-8") as fh:
            skip = {line.strip() for line in fh if line.strip()}
    items[:] = [item for item in items if item.nodeid not in skip]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current["case"] = item.nodeid
    _current["done"] = False
    _emit({"event": "start", "case": item.nodeid})
    yield
    if not _current.get("done"):
        _emit({"event": "end", "case": item.nodeid, "verdict": "error",
               "reason": {"code": "internal"}, "time_s": 0.0})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _arm(CASE_LIMIT_S)
    try:
        yield
    finally:
        _disarm()


def _classify(excinfo) -> tuple[str, dict]:
    exc = excinfo.value
    tb = excinfo.tb
    name = type(exc).__name__
    if name == "Mismatch" and hasattr(exc, "code"):
        return "wrong", {"code": exc.code, **exc.params}
    if isinstance(exc, CaseTimeout):
        return "timeout", {"code": "timeout", "limit_s": CASE_LIMIT_S}
    if isinstance(exc, MemoryError):
        return "memory", {"code": "memory", "line": _learner_line(tb)}
    if isinstance(exc, SystemExit):
        return "error", {"code": "sys_exit", "exit_code": _short(exc.code), "line": _learner_line(tb)}
    if isinstance(exc, OSError) and getattr(exc, "errno", None) == 27:  # EFBIG
        return "error", {"code": "output_limit"}
    if isinstance(exc, RecursionError):
        return "error", {"code": "exception", **_describe_exception(exc, tb)}
    if isinstance(exc, NotImplementedError):
        return "error", {"code": "not_implemented", "line": _learner_line(tb)}
    if isinstance(exc, AssertionError):
        return "wrong", {"code": "assert"}
    if isinstance(exc, pytest.fail.Exception):
        return "wrong", {"code": "assert"}
    return "error", {"code": "exception", **_describe_exception(exc, tb)}


def _json_safe(value, depth: int = 0):
    if depth > 6:
        return _short(repr(value), 200)
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, str) else _short(value, 500)
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in list(value)[:50]]
    if hasattr(value, "tolist"):
        try:
            return _json_safe(value.tolist(), depth + 1)
        except Exception:  # noqa: BLE001
            pass
    return _short(repr(value), 200)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "teardown":
        return
    if call.when == "setup" and call.excinfo is None:
        return
    if call.excinfo is None:
        verdict, reason = "pass", {}
    else:
        verdict, reason = _classify(call.excinfo)
    record = {"event": "end", "case": item.nodeid, "verdict": verdict, "reason": reason,
              "time_s": round(call.duration, 6)}
    output = (report.capstdout or "") + (report.capstderr or "")
    if output:
        record["output"] = output[:OUTPUT_LIMIT]
        record["output_chars"] = len(output)
    example = getattr(item.module, "EXAMPLE", None) if item.module is not None else None
    if example is not None and item.module.__name__.endswith("test_example"):
        details = {"inputs": _json_safe({"function": example.get("function"),
                                         "args": example.get("args", []),
                                         "kwargs": example.get("kwargs", {})})}
        exc = call.excinfo.value if call.excinfo is not None else None
        if exc is not None and hasattr(exc, "expected") and getattr(exc, "code", None):
            details["expected"] = _json_safe(exc.expected)
            details["got"] = _json_safe(exc.got)
        elif call.excinfo is not None:
            details["expected"] = _json_safe(example.get("expected"))
        record["details"] = details
    _emit(record)
    _current["done"] = True
