"""Submissions written to cheat or to break the judge, each kept as a regression case.

Every test asserts the verdict: none of these is accepted, the judge never crashes or hangs, its
files and the learner's progress are not changed by the learner's code, and no hidden expected
value appears in what the learner is shown. Several run twice: with the sandbox as the kernel
allows, and with Landlock switched off (``PRACTICE_NO_LANDLOCK=1``), where the process split alone
must still hold.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from practice import catalog, progress
from practice.judging import judge
from practice.runner import Limits
from practice.verdicts import clean, render_html, render_text, sandbox_notice

ROOT = Path(__file__).resolve().parents[1]
P184 = catalog.find("184")
SOLUTION = P184.solution_path.read_text(encoding="utf-8")
FAST = Limits(case_s=3.0, run_s=20.0, memory_mb=1024)
SUMMARY = re.compile(r"^(通过|Passed) \d+ / \d+$", re.M)


def _landlock_abi() -> int:
    """The tiny probe: the kernel's Landlock ABI version, 0 when it has none."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return max(0, libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0


LANDLOCK = _landlock_abi() > 0


@pytest.fixture(params=["sandbox", "no_landlock"])
def mode(request, monkeypatch):
    if request.param == "no_landlock":
        monkeypatch.setenv("PRACTICE_NO_LANDLOCK", "1")
    else:
        monkeypatch.delenv("PRACTICE_NO_LANDLOCK", raising=False)
    return request.param


def _judge(tmp_path, source, examples_only=True, limits=FAST, name="attack.py"):
    path = tmp_path / name
    path.write_text(source, encoding="utf-8", errors="surrogateescape")
    return judge(P184, path, examples_only=examples_only, limits=limits)


def _cli(*args, workspace_dir: Path, env_extra=None, timeout=90):
    env = dict(os.environ, PRACTICE_WORKSPACE=str(workspace_dir))
    env.pop("PRACTICE_LANG", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(ROOT / "practice" / "judge.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, errors="replace")


def _tree_digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not {"__pycache__", "workspace"}.intersection(p.parts)}


def _assert_not_accepted(report):
    assert not report.accepted
    text = render_text(report)
    assert len(SUMMARY.findall(text)) <= 1
    return text


# --- the cheats ------------------------------------------------------------------------------

def test_from_reference_import_star(tmp_path, mode):
    report = _judge(tmp_path, "from reference import *\n", examples_only=False)
    assert report.cannot is not None and report.cannot["kind"] == "exception"
    assert report.cannot["type"] == "ModuleNotFoundError"
    assert "无法评测" in _assert_not_accepted(report)


def test_import_reference_by_path_is_refused(tmp_path):
    if not LANDLOCK:
        pytest.skip("no Landlock in this kernel: reading the project's files is not prevented")
    source = (f"exec(open({str(P184.solution_path)!r}).read())\n")
    report = _judge(tmp_path, source, examples_only=False)
    assert report.cannot is not None and report.cannot["type"] == "PermissionError"
    assert report.isolated is True
    _assert_not_accepted(report)


FRAME_THIEF = """
import gc, sys
def _steal():
    f = sys._getframe(1)
    while f is not None:
        for key in ("expected", "EXAMPLE"):
            if key in f.f_locals:
                value = f.f_locals[key]
                return value["expected"] if key == "EXAMPLE" else value
            if key in f.f_globals:
                return f.f_globals[key]["expected"]
        f = f.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "expected" in obj and "function" in obj:
            return obj["expected"]
    return {}
def plan(*a, **k):
    return _steal()
def max_batch_by_kv(*a, **k):
    return _steal()
def decode_step_ms(*a, **k):
    return _steal()
def prefill_rps(*a, **k):
    return _steal()
"""


def test_reading_expected_from_the_callers_frame(tmp_path, mode):
    report = _judge(tmp_path, FRAME_THIEF, examples_only=False)
    assert report.cannot is None and report.passed == 0
    assert report.cases[0].verdict == "wrong"
    _assert_not_accepted(report)


PATCH_JUDGE = """
import builtins, sys, types
for name in ("judgekit", "conftest", "judge_plugin", "judge_remote", "reference"):
    fake = types.ModuleType(name)
    fake.check_close = lambda *a, **k: None
    fake.run_example = lambda *a, **k: None
    fake.expect_value_error = lambda *a, **k: None
    fake.call = lambda module, name: (lambda *a, **k: None)
    sys.modules[name] = fake
try:
    import pytest, _pytest.reports, _pytest.runner
    _pytest.reports.TestReport.passed = property(lambda self: True)
    _pytest.reports.TestReport.failed = property(lambda self: False)
    pytest.fail = lambda *a, **k: None
    _pytest.runner.call_and_report = lambda *a, **k: None
except Exception:
    pass
def plan(*a, **k):
    return {}
"""


def test_replacing_check_helpers_and_patching_pytest(tmp_path, mode):
    report = _judge(tmp_path, PATCH_JUDGE, examples_only=False)
    assert report.cannot is None
    example = report.cases[0]
    assert example.is_example and example.verdict == "wrong" and example.reason["code"] == "missing_keys"
    _assert_not_accepted(report)


FORGE_RECORDS = """
import glob, json, os
ids = ["test_example.py::test_worked_example"] + ["test_hidden.py::test_random[%02d]" % i for i in range(20)]
lines = "".join(json.dumps({"event": "end", "case": c, "verdict": "pass", "reason": {}, "time_s": 0})
                + "\\n" for c in ids).encode()
def _forge():
    for fd in range(0, 256):
        try:
            os.write(fd, lines)
        except OSError:
            pass
    for pid in {os.getppid(), os.getpgrp(), 1}:
        for path in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                with open(path, "ab") as fh:
                    fh.write(lines)
            except OSError:
                pass
    for path in glob.glob("/tmp/practice-judge-*/*"):
        try:
            with open(path, "ab") as fh:
                fh.write(lines)
        except OSError:
            pass
_forge()
def plan(*a, **k):
    _forge()
    return {}
"""


def test_forged_result_records(tmp_path, mode):
    # Writing on every descriptor at import garbles the worker's own channel: cannot judge.
    report = _judge(tmp_path, FORGE_RECORDS)
    assert report.cannot is not None and report.cannot["kind"] == "bad_reply"
    _assert_not_accepted(report)
    # Forging only inside the call: that case is the learner's error, the rest are judged.
    source = FORGE_RECORDS.replace("\n_forge()\n", "\n")
    report = _judge(tmp_path, source)
    assert report.cannot is None and report.total == 1
    assert report.cases[0].verdict == "error" and report.cases[0].reason["code"] == "bad_reply"
    _assert_not_accepted(report)


def test_patching_builtins_breaks_only_the_learner(tmp_path):
    source = "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: dict\n" \
             "def plan(*a, **k):\n    return {}\n"
    report = _judge(tmp_path, source)
    _assert_not_accepted(report)
    assert report.cannot is not None or report.cases[0].verdict in ("wrong", "error")


def _rewrite_source(problems_dir: Path, workspace: Path | None = None) -> str:
    return f"""
import glob, os
TARGETS = glob.glob({str(problems_dir)!r} + "/*/test_*.py") + glob.glob("/tmp/practice-judge-*/test_*.py")
TARGETS += glob.glob({str(problems_dir)!r} + "/*/solution.py")
TARGETS += glob.glob({str(ROOT / 'practice' / 'sandbox')!r} + "/*.py")
def _attack():
    for path in TARGETS:
        for mode, text in (("w", "def test_ok():\\n    pass\\n"), ("a", "\\nassert False\\n")):
            try:
                with open(path, mode) as fh:
                    fh.write(text)
            except OSError:
                pass
        try:
            os.truncate(path, 0)
        except OSError:
            pass
    progress = {str((workspace or Path('/nonexistent')) / '.progress.json')!r}
    try:
        with open(progress, "w") as fh:
            fh.write('{{"version": 1, "problems": {{"184": {{"attempts": 1, "accepted_at": "2020-01-01T00:00:00"}}}}}}')
    except OSError:
        pass
_attack()
def plan(*a, **k):
    _attack()
    return {{}}
"""


def test_truncating_or_rewriting_test_files(tmp_path, mode):
    before = _tree_digest(ROOT / "practice")
    report = _judge(tmp_path, _rewrite_source(catalog.PROBLEMS_DIR), examples_only=False)
    _assert_not_accepted(report)
    assert _tree_digest(ROOT / "practice") == before
    if report.isolated:
        assert report.cannot is None and report.cases[0].verdict == "wrong"
    else:  # the files were changed during the run: restored, and the run does not count
        assert report.cannot == {"kind": "tampered"}


def test_rewriting_the_progress_file(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sub = tmp_path / "attack.py"
    sub.write_text(_rewrite_source(catalog.PROBLEMS_DIR, ws), encoding="utf-8")
    proc = _cli("test", "184", str(sub), workspace_dir=ws)
    assert proc.returncode == 1 and "通过 0 /" in proc.stdout
    if not LANDLOCK:
        pytest.skip("no Landlock in this kernel: the workspace is not protected from the learner's code")
    data = json.loads((ws / ".progress.json").read_text(encoding="utf-8"))
    assert data["problems"]["184"]["attempts"] == 1
    assert not data["problems"]["184"].get("accepted_at")
    assert progress.status(data, 184) == "tried"


EQ_EVERYTHING = {
    "float_subclass": "class Num(float):\n    def __eq__(self, o): return True\n    __hash__ = float.__hash__\n"
                      "    def __sub__(self, o): return Num(0)\n    def __abs__(self): return Num(0)\n",
    "str_subclass": "class Num(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\n",
    "int_subclass": "class Num(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n",
    "plain_object": "class Num:\n    def __eq__(self, o): return True\n    def __init__(self, *a): pass\n",
}


@pytest.mark.parametrize("kind", list(EQ_EVERYTHING))
def test_values_that_equal_everything(tmp_path, kind):
    source = (EQ_EVERYTHING[kind] +
              "class D(dict):\n    def __eq__(self, o): return True\n"
              "KEYS = ['batch', 'bound', 'step_ms', 'decode_rps', 'decode_instances', 'prefill_rps',"
              " 'prefill_instances', 'gpus']\n"
              "def plan(*a, **k):\n    return {key: Num(1) for key in KEYS}\n"
              "def max_batch_by_kv(*a, **k):\n    return Num(1)\n")
    report = _judge(tmp_path, source)
    case = report.cases[0]
    assert case.verdict == "wrong" and case.reason["code"] == "return_type"
    assert case.reason["got"] == "Num"
    text = _assert_not_accepted(report)
    assert "Num" in text
    source = source.replace("return {key: Num(1) for key in KEYS}", "return D()")
    report = _judge(tmp_path, source)
    assert report.cases[0].reason == {"code": "return_type", "path": "result", "got": "D"}


def test_callable_and_generator_results_are_wrong_type(tmp_path):
    report = _judge(tmp_path, "def plan(*a, **k):\n    return (x for x in ())\n")
    assert report.cases[0].verdict == "wrong" and report.cases[0].reason["code"] == "return_type"
    report = _judge(tmp_path, "def plan(*a, **k):\n    return plan\n")
    assert report.cases[0].verdict == "wrong" and report.cases[0].reason["got"] == "function"


def test_numpy_values_are_plain_numbers(tmp_path):
    source = SOLUTION + ("\n\nimport numpy as np\n_p = plan\ndef plan(*a, **k):\n    r = _p(*a, **k)\n"
                         "    r['step_ms'] = np.float64(r['step_ms'])\n    r['gpus'] = np.int64(r['gpus'])\n"
                         "    return r\n")
    report = _judge(tmp_path, source)
    assert report.accepted


NEW_SESSION_CHILD = """
import os, time
def plan(*a, **k):
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode())
            while True:
                time.sleep(0.05)
        os._exit(0)
    pid = int(os.read(r, 32))
    print("PID=%d" % pid)
    return {}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_children_in_a_new_session_are_killed(tmp_path, mode):
    report = _judge(tmp_path, NEW_SESSION_CHILD)
    case = report.cases[0]
    assert case.verdict == "wrong"
    match = re.search(r"PID=(\d+)", case.output)
    assert match, case.output
    pid = int(match.group(1))
    deadline = time.monotonic() + 3
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_fork_bomb_and_memory_over_many_processes(tmp_path):
    source = ("import os, time\n"
              "def plan(*a, **k):\n"
              "    for _ in range(6):\n"
              "        if os.fork() == 0:\n"
              "            block = b'x' * (300 * 1024 * 1024)\n"
              "            time.sleep(30)\n"
              "    time.sleep(30)\n")
    started = time.monotonic()
    report = _judge(tmp_path, source, limits=Limits(case_s=20.0, run_s=30.0, memory_mb=1024))
    assert time.monotonic() - started < 25
    case = report.cases[0]
    assert case.verdict == "memory" and case.reason["code"] == "memory_total"


FAKE_LINES = "\x1b[2K\r\x1b[32m通过 53 / 53\x1b[0m\n全部通过！\n\u202e\x00"


def test_fake_verdict_lines_with_ansi_escapes(tmp_path):
    source = ("import sys\n"
              f"FAKE = {FAKE_LINES!r}\n"
              "def plan(*a, **k):\n"
              "    print(FAKE * 3)\n"
              "    sys.stderr.write(FAKE)\n"
              "    raise ValueError(FAKE + 'x' * 1000)\n")
    report = _judge(tmp_path, source)
    case = report.cases[0]
    assert case.verdict == "error" and case.reason["type"] == "ValueError"
    for text in (render_text(report), render_text(report, "en"), render_html(report)):
        assert "\x1b" not in text and "\r" not in text and "\x00" not in text and "\u202e" not in text
        assert len(SUMMARY.findall(text)) <= 1
    text = render_text(report)
    assert SUMMARY.findall(text) == ["通过"] and text.rstrip().endswith("通过 0 / 1")
    assert "已截断" in text
    sub = tmp_path / "fake.py"
    sub.write_text(source, encoding="utf-8")
    proc = _cli("test", "184", str(sub), "--examples", workspace_dir=tmp_path / "ws")
    assert proc.returncode == 1 and "\x1b" not in proc.stdout
    assert re.findall(r"^通过 \d+ / \d+$", proc.stdout, re.M) == ["通过 0 / 1"]


def test_concurrent_judges_on_one_problem(tmp_path):
    ws = tmp_path / "ws"
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(SOLUTION, encoding="utf-8")
    bad.write_text("def plan(*a, **k):\n    return {}\n", encoding="utf-8")
    env = dict(os.environ, PRACTICE_WORKSPACE=str(ws))
    procs = [subprocess.Popen([sys.executable, str(ROOT / "practice" / "judge.py"), "test", "184", str(f)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for f in (bad, good, bad, bad)]
    # Meanwhile, many quick writers hammer the same file.
    code = ("import sys\nfrom pathlib import Path\nfrom practice import progress\n"
            "for _ in range(15):\n    progress.record(Path(sys.argv[1]), 184, False, 'wrong')\n")
    writers = [subprocess.Popen([sys.executable, "-c", code, str(ws)], cwd=ROOT) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [1, 0, 1, 1]
    assert all(w.wait(timeout=120) == 0 for w in writers)
    data, aside = progress.load(ws)
    assert aside is None
    entry = data["problems"]["184"]
    assert entry["attempts"] == 4 + 4 * 15
    assert entry["accepted_at"] and progress.status(data, 184) == "solved"


# --- broken code that must be the learner's error, never the judge's --------------------------

LEARNER_ERRORS = {
    # name: (source, expected verdict, reason code, reason type or None)
    "named_like_mismatch": ("class Mismatch(AssertionError):\n    code = 'exact'\n    params = {}\n"
                            "def plan(*a, **k):\n    e = Mismatch('x')\n    e.code = 'pass'\n    raise e\n",
                            "error", "exception", "Mismatch"),
    "named_like_case_timeout": ("class CaseTimeout(BaseException):\n    pass\n"
                                "def plan(*a, **k):\n    raise CaseTimeout()\n", "error", "exception", "CaseTimeout"),
    "named_like_submission_error": ("class SubmissionError(Exception):\n    pass\n"
                                    "def plan(*a, **k):\n    raise SubmissionError('x')\n",
                                    "error", "exception", "SubmissionError"),
    "raising_str": ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
                    "    def __repr__(self):\n        raise RuntimeError('no')\n"
                    "def plan(*a, **k):\n    raise E()\n", "error", "exception", "E"),
    "raising_repr_result": ("class R(dict):\n    def __repr__(self):\n        raise RuntimeError('no')\n"
                            "def plan(*a, **k):\n    return R()\n", "wrong", "return_type", None),
    "keyboard_interrupt": ("def plan(*a, **k):\n    raise KeyboardInterrupt('stop')\n",
                           "error", "exception", "KeyboardInterrupt"),
    "pytest_exit": ("import pytest\ndef plan(*a, **k):\n    pytest.exit('bye', returncode=0)\n",
                    "error", "exception", "Exit"),
    "surrogate_message": ("def plan(*a, **k):\n    raise ValueError('bad \\udc80 \\ud800 text')\n",
                          "error", "exception", "ValueError"),
    "nul_in_message": ("def plan(*a, **k):\n    raise RuntimeError('a\\x00b')\n", "error", "exception", "RuntimeError"),
    "surrogate_result": ("def plan(*a, **k):\n    return {'bound': '\\udc80'}\n", "wrong", "missing_keys", None),
    "sigint_to_judge": ("import os, signal\ndef plan(*a, **k):\n    for pid in (os.getppid(), os.getpgrp()):\n"
                        "        try:\n            os.kill(pid, signal.SIGINT)\n        except OSError:\n"
                        "            pass\n    return {}\n", "wrong", "missing_keys", None),
    "garbage_on_the_socket": ("import os\ndef plan(*a, **k):\n    for fd in range(3, 20):\n        try:\n"
                              "            os.write(fd, b'\\xff\\xff\\xff\\x00garbage')\n        except OSError:\n"
                              "            pass\n    return {}\n", "error", "bad_reply", None),
    "huge_result": ("def plan(*a, **k):\n    return ['x' * 1000] * 20000\n", "error", "bad_reply", None),
}


@pytest.mark.parametrize("name", list(LEARNER_ERRORS))
def test_learner_errors_are_the_learners(tmp_path, name):
    source, verdict, code, type_name = LEARNER_ERRORS[name]
    report = _judge(tmp_path, source)
    assert report.cannot is None and report.total == 1
    case = report.cases[0]
    assert (case.verdict, case.reason.get("code")) == (verdict, code), case.reason
    if type_name:
        assert case.reason["type"] == type_name
    if code == "exception":
        assert case.reason["line"] and case.reason["line"] >= 1
    text = _assert_not_accepted(report)
    assert "评测器内部错误" not in text and "Traceback" not in text
    assert text.rstrip().endswith("通过 0 / 1")


@pytest.mark.parametrize("source,kind", [
    ("x = 1\x00\n", "syntax"),
    ("x = '\udc80'\n", "syntax"),
    ("class Mismatch(Exception):\n    pass\nraise Mismatch('at import')\n", "exception"),
    ("raise KeyboardInterrupt\n", "exception"),
    ("import pytest\npytest.exit('bye')\n", "exception"),
    ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise E()\n", "exception"),
])
def test_import_time_breakage_is_cannot_judge(tmp_path, source, kind):
    report = _judge(tmp_path, source)
    assert report.cannot is not None and report.cannot["kind"] == kind
    text = render_text(report)
    assert text.startswith("无法评测") and "None" not in text and "评测器内部错误" not in text
    if kind == "exception":
        assert "第 " in text and " 行" in text


# --- what the learner is shown -----------------------------------------------------------------

def test_hidden_values_never_appear_in_a_verdict(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("_ref184", P184.solution_path)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    h100 = dict(params=70e9, weight_bytes=140e9, kv_bytes_per_token=327680, gpus_per_instance=8,
                gpu_mem_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989)
    hidden = ref.plan(200, 2000, 500, 12, **h100)
    shown_in_example = set(P184.example["expected"].values())
    source = SOLUTION + ("\n\n_p = plan\ndef plan(*a, **k):\n    r = _p(*a, **k)\n"
                         "    r['step_ms'] *= 1.5\n    r['gpus'] += 1\n    return r\n")
    report = _judge(tmp_path, source, examples_only=False)
    assert not report.accepted
    shown = render_text(report) + render_text(report, "en") + render_html(report)
    shown += json.dumps([(c.reason, c.details) for c in report.cases if not c.is_example], default=str)
    checked = [v for v in hidden.values() if isinstance(v, float) and v not in shown_in_example]
    assert len(checked) >= 2
    for value in checked:
        assert repr(value) not in shown and f"{value:.6g}" not in shown
    assert all(c.details is None for c in report.cases if not c.is_example)


def test_notebook_magic_and_cli_give_the_same_verdicts(tmp_path, monkeypatch):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("PRACTICE_WORKSPACE", str(tmp_path / "nb"))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "practice")
    sources = [SOLUTION, "def plan(*a, **k):\n    return {}\n", "from reference import *\n",
               SOLUTION + "\n\ndef plan(*a, **k):\n    raise KeyboardInterrupt\n"]
    for i, source in enumerate(sources):
        shown = shell.run_cell_magic("judge", "184 --examples", source)
        sub = tmp_path / f"s{i}.py"
        sub.write_text(source, encoding="utf-8")
        cli = judge(P184, sub, examples_only=True)
        key = lambda r: (r.cannot and r.cannot.get("kind"),  # noqa: E731
                         [(c.case, c.verdict, c.reason.get("code")) for c in r.cases])
        assert key(shown.report) == key(cli)
    shown = shell.run_cell_magic("judge", "184 --examples --time-limit -3", SOLUTION)
    assert shown is None


def test_sandbox_status_and_notice(tmp_path, monkeypatch):
    report = _judge(tmp_path, SOLUTION)
    assert report.accepted
    if LANDLOCK:
        assert report.isolated is True and sandbox_notice(report) is None
    monkeypatch.setenv("PRACTICE_NO_LANDLOCK", "1")
    report = _judge(tmp_path, SOLUTION)
    assert report.accepted and report.isolated is False
    assert "Landlock" in sandbox_notice(report) and "Landlock" in sandbox_notice(report, "en")
    sub = tmp_path / "ok.py"
    sub.write_text(SOLUTION, encoding="utf-8")
    proc = _cli("test", "184", str(sub), "--examples", workspace_dir=tmp_path / "ws",
                env_extra={"PRACTICE_NO_LANDLOCK": "1"})
    assert proc.returncode == 0 and proc.stderr.count("Landlock") == 1


@pytest.mark.parametrize("args,field", [
    (["--time-limit", "0"], "--time-limit"), (["--time-limit", "nan"], "--time-limit"),
    (["--time-limit", "inf"], "--time-limit"), (["--time-limit", "-2"], "--time-limit"),
    (["--time-limit", "abc"], "--time-limit"), (["--memory-mb", "0"], "--memory-mb"),
    (["--memory-mb", "1.5"], "--memory-mb"), (["--memory-mb", "-100"], "--memory-mb"),
])
def test_limit_options_are_validated(tmp_path, args, field):
    proc = _cli("184", *args, workspace_dir=tmp_path / "ws")
    assert proc.returncode == 2 and field in proc.stderr and ("(0, 600]" in proc.stderr or "[128, 65536]" in proc.stderr)
    assert not (tmp_path / "ws").exists()
    proc = _cli("--lang", "en", *args, "184", workspace_dir=tmp_path / "ws")
    assert proc.returncode == 2 and field in proc.stderr and "Invalid value" in proc.stderr


def test_options_before_or_after_the_verb(tmp_path):
    ws = tmp_path / "ws"
    for argv in (["--lang", "en", "progress"], ["progress", "--lang", "en"], ["--lang=en", "list"],
                 ["list", "--lang=en"]):
        proc = _cli(*argv, workspace_dir=ws)
        assert proc.returncode == 0 and ("Solved 0 of" in proc.stdout or "new" in proc.stdout), argv
    sub = tmp_path / "ok.py"
    sub.write_text(SOLUTION, encoding="utf-8")
    proc = _cli("--lang", "en", "--time-limit", "2", "test", "184", str(sub), "--examples", workspace_dir=ws)
    assert proc.returncode == 0 and "Passed 1 / 1" in proc.stdout


def test_clean_escapes_and_cuts():
    assert clean("a\x1b[31mb\r\nc") == "a\\x1b[31mb\\x0d\\x0ac"
    assert clean("\ud800\x00\u202e") == "\\ud800\\x00\\u202e"
    assert clean("中文") == "中文"
    cut = clean("x" * 1000, 10, "en")
    assert cut.startswith("x" * 10) and "1000" in cut and len(cut) < 60
    assert math.isfinite(len(clean(None)))
