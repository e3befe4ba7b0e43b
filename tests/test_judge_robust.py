"""The judge as a learner meets it, and the parameter declarations (declare.py).

- an infinite loop in one function costs that function's cases only (each case has its own limit;
  after two timeouts its later cases are judged at once) and the verdict lists them;
- Ctrl-C stops a run within a second, reaps the worker and prints what was judged;
- outside the course's environment the judge says in one line how to run it;
- progress, hint, a mistyped verb and a bare ``judge.py`` point to the next step;
- declarations: the generated cases name the field and the rule, the statement block must equal the
  rendering, and a reference that contradicts its declaration fails the check.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from practice import catalog, declaration, mutants, progress
from practice.judging import judge
from practice.runner import Limits
from practice.verdicts import render_text, reason_text

ROOT = Path(__file__).resolve().parents[1]
P164 = catalog.find("164")
P169 = catalog.find("169")
SOLUTION_164 = P164.solution_path.read_text(encoding="utf-8")
LOOP_ROUTE = SOLUTION_164.replace("    if not _whole(input_len) or input_len < 1:",
                                  "    while True:\n        pass\n    if not _whole(input_len) or input_len < 1:")


def _cli(*args, workspace_dir: Path, python: list[str] | None = None, timeout=60):
    env = dict(os.environ, PRACTICE_WORKSPACE=str(workspace_dir))
    env.pop("PRACTICE_LANG", None)
    proc = subprocess.run([*(python or [sys.executable]), str(ROOT / "practice/judge.py"), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def _file(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "sub.py"
    path.write_text(source, encoding="utf-8")
    return path


# --- an infinite loop ---------------------------------------------------------------------------

def test_infinite_loop_costs_only_that_functions_cases(tmp_path):
    assert LOOP_ROUTE != SOLUTION_164
    started = time.monotonic()
    report = judge(P164, _file(tmp_path, LOOP_ROUTE), limits=Limits(case_s=1.0, run_s=60.0, memory_mb=1024))
    elapsed = time.monotonic() - started
    assert elapsed < 20                               # two 1 s timeouts, not one per route case
    by_code = {}
    for case in report.cases:
        by_code.setdefault(case.reason.get("code"), []).append(case)
    assert len(by_code["timeout"]) == 2               # the two cases that really ran out of time
    assert len(by_code["timeout_hung"]) > 10          # route's later cases, judged at once
    assert all(c.reason["name"] == "route" for c in by_code["timeout_hung"])
    assert "skipped" not in {c.verdict for c in report.cases}
    stream_only = [c for c in report.cases if "route_stream" in c.case or "no_requests" in c.case
                   or "predictions_match_sim" in c.case]
    assert stream_only and all(c.passed for c in stream_only)    # the other function is still judged
    text = render_text(report)
    assert "超时的用例：" in text and "调用了已经超时的函数 route" in text
    assert "route 已在 2 个用例里超过 1 s" in reason_text(by_code["timeout_hung"][0])


# --- Ctrl-C ---------------------------------------------------------------------------------------

def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# "inherited_ignore": started with SIGINT ignored (a shell's background job, or a test process that
# once loaded the judge's pytest plugin); Python keeps an inherited SIG_IGN unless told otherwise.
@pytest.mark.parametrize("start", ["default", "inherited_ignore"])
def test_ctrl_c_stops_within_a_second_and_reaps_the_worker(tmp_path, start):
    pid_file = tmp_path / "worker.pid"
    source = LOOP_ROUTE.replace("    while True:\n        pass\n",
                                f"    open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid()))\n"
                                "    while True:\n        pass\n", 1)
    env = dict(os.environ, PRACTICE_WORKSPACE=str(tmp_path / "ws"), PRACTICE_NO_LANDLOCK="1")
    env.pop("PRACTICE_LANG", None)
    proc = subprocess.Popen([sys.executable, str(ROOT / "practice/judge.py"), "test", "164",
                             str(_file(tmp_path, source))], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_ignore_sigint if start == "inherited_ignore" else None)
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the looping function never started"
    time.sleep(0.3)
    worker = int(pid_file.read_text())
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 1.5
    assert proc.returncode == 130
    assert "评测被中断（Ctrl-C）" in out and "通过 " in out and "Traceback" not in out
    time.sleep(0.2)
    assert not Path(f"/proc/{worker}").exists()       # killed and reaped
    assert not (tmp_path / "ws" / progress.FILE_NAME).exists()   # not counted as an attempt


# --- the command line as a learner meets it ----------------------------------------------------------

def test_outside_the_course_environment_says_how_to_run_it(tmp_path):
    # -S: no site-packages, so neither filelock nor pytest can be imported
    rc, out = _cli("184", workspace_dir=tmp_path, python=[sys.executable, "-S"])
    assert rc == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "make lab" in lines[0] and ".venv/bin/python practice/judge.py 184" in lines[0]
    assert "ModuleNotFoundError" not in out


def test_progress_points_to_a_tried_problem_before_an_untouched_one(tmp_path):
    progress.record(tmp_path, 139, False, "wrong")
    rc, out = _cli("progress", workspace_dir=tmp_path)
    assert rc == 0 and "继续上次没做完的：139" in out and "下一题" not in out
    progress.record(tmp_path, 139, True, "pass")
    rc, out = _cli("progress", workspace_dir=tmp_path)
    assert "下一题：126" in out


def test_hint_says_when_there_are_no_more(tmp_path):
    n = len(catalog.find("141").hints)
    for k in range(1, n + 1):
        rc, out = _cli("hint", "141", workspace_dir=tmp_path)
        assert rc == 0 and ("没有更多了" in out) == (k == n)


def test_mistyped_verb_suggests_the_nearest(tmp_path):
    rc, out = _cli("hnt", "139", workspace_dir=tmp_path)
    assert rc == 2 and "`python practice/judge.py hint 139`" in out
    rc, out = _cli("--lang", "en", "progres", workspace_dir=tmp_path)
    assert rc == 2 and "Did you mean `python practice/judge.py progress`" in out
    rc, out = _cli("9999", workspace_dir=tmp_path)            # not a verb's typo: an unknown problem
    assert rc == 2 and "9999" in out and "你是想" not in out


def test_bare_command_prints_the_next_step(tmp_path):
    rc, out = _cli(workspace_dir=tmp_path)
    assert rc == 0 and "下一题：126" in out and "judge.py list" in out and "usage" not in out


# --- declarations -----------------------------------------------------------------------------------

def test_declared_case_names_the_field_and_the_rule(tmp_path):
    broken = SOLUTION_164.replace("    if not _real(ttft_slo_s) or ttft_slo_s <= 0:", "    if ttft_slo_s <= 0:")
    assert broken != SOLUTION_164
    report = judge(P164, _file(tmp_path, broken), limits=Limits(case_s=2.0, run_s=60.0, memory_mb=1024))
    failed = {c.case.split("::")[-1]: c for c in report.cases if not c.passed}
    case = failed["test_declared[route-ttft_slo_s]"]
    text = reason_text(case)
    assert "`ttft_slo_s` 应为 > 0 的有限数" in text and "传入 nan" in text
    assert "ttft_slo_s must be" not in text                     # our words, not the reference's message
    hand = failed["test_invalid[route_ttft_slo_s_16]"]          # a hand-written case quotes the rule too
    assert "`ttft_slo_s` 的规则是 > 0 的有限数" in reason_text(hand)
    en = reason_text(case, "en")
    assert "`ttft_slo_s` must be finite number > 0" in en


def test_tuple_of_groups_is_accepted_because_the_declaration_says_so(tmp_path):
    source = P169.solution_path.read_text(encoding="utf-8").replace(
        "if not isinstance(layers, (list, tuple)) or not layers:", "if not isinstance(layers, list) or not layers:")
    report = judge(P169, _file(tmp_path, source), limits=Limits(case_s=2.0, run_s=60.0, memory_mb=1024))
    failed = {c.case.split("::")[-1]: c for c in report.cases if not c.passed}
    assert failed["test_declared[kv_bytes-layers]"].reason["code"] == "decl_rejected"
    assert "是合法的输入" in reason_text(failed["test_declared[kv_bytes-layers]"])


def _copy(problem, tmp_path) -> catalog.Problem:
    root = tmp_path / "problems"
    shutil.copytree(problem.folder, root / problem.folder.name)
    return catalog.load_problem(root / problem.folder.name)


def test_check_fails_when_statement_and_declaration_differ(tmp_path):
    copy = _copy(P164, tmp_path)
    assert declaration.issues(copy) == []
    md = copy.statement_path
    md.write_text(md.read_text(encoding="utf-8").replace("- `ttft_slo_s`：> 0 的有限数", "- `ttft_slo_s`：> 0"),
                  encoding="utf-8")
    assert any("block differs from declare.py" in i for i in declaration.issues(catalog.load_problem(copy.folder)))
    declaration.write(catalog.load_problem(copy.folder))         # `judge.py declare` puts it back
    assert declaration.issues(catalog.load_problem(copy.folder)) == []
    text = md.read_text(encoding="utf-8").replace("`route(input_len, instances, ttft_slo_s) -> dict`",
                                                  "`route(input_len, instances, ttft_slo_s) -> float`", 1)
    md.write_text(text, encoding="utf-8")
    assert any("-> float, declare.py -> dict" in i for i in declaration.issues(catalog.load_problem(copy.folder)))


def test_reference_that_contradicts_its_declaration_fails(tmp_path):
    copy = _copy(P164, tmp_path)
    path = copy.declaration_path
    path.write_text(path.read_text(encoding="utf-8").replace("SLO = Real(gt=0)", "SLO = Real(gt=0, finite=False)"),
                    encoding="utf-8")
    _, failures = mutants.validated_fields(catalog.load_problem(copy.folder))
    # the declaration now allows inf, the reference rejects it: the valid side fails
    assert any("test_declared" in f and "decl_rejected" in f and "ttft_slo_s" in f for f in failures)


def test_every_declared_problem_agrees_with_its_declaration():
    declared = [p for p in catalog.all_problems() if p.declaration_path.is_file()]
    assert {129, 164, 169, 178} <= {p.id for p in declared}
    for problem in declared:
        assert declaration.issues(problem) == [], problem.key


def test_chapters_05_to_11_group_the_problems(tmp_path):
    assert all(f"{n:02d}" in catalog.CHAPTERS for n in range(1, 12))
    rc, out = _cli("list", workspace_dir=tmp_path)
    assert rc == 0 and "章节 05 量化部署" in out and "章节 08 投机解码" in out
    assert out.index("章节 05") < out.index("167") < out.index("章节 08") < out.index("150")


def _kit():
    return declaration.kit()


def test_generated_variants_cover_both_sides_of_every_bound():
    import math
    k = _kit()
    values = lambda spec, base: [v for _, v in spec.invalid(base)]          # noqa: E731
    edges = lambda spec, base: [v for _, v in spec.edges(base)]             # noqa: E731
    ints = k.Int(ge=1, le=8)
    assert 0 in values(ints, 4) and 9 in values(ints, 4) and {1, 8} <= set(edges(ints, 4))
    assert True in values(ints, 4) and 4.0 in values(ints, 4)              # bools and floats are not ints
    real = k.Real(gt=0, le=1)
    bad = values(real, 0.5)
    assert 0 in bad and math.nextafter(1, 2) in bad and any(isinstance(v, float) and math.isnan(v) for v in bad)
    assert math.inf in bad and True in bad
    assert 1 in edges(real, 0.5) and all(0 < v <= 1 for v in edges(real, 0.5))
    assert math.inf not in values(k.Real(ge=0, finite=False), 1.0) and math.inf in edges(k.Real(ge=0, finite=False), 1.0)
    lists = k.List(k.Int(ge=0), min_len=1)
    assert (1, 2) in values(lists, [1, 2]) and [] in values(lists, [1, 2]) and [-1, 2] in values(lists, [1, 2])
    assert (1, 2) in edges(k.List(k.Int(ge=0), kinds=("list", "tuple")), [1, 2])
    d = k.Dict({"a": k.Int(ge=0), "b": k.Str(choices=["x", "y"])})
    bad = values(d, {"a": 1, "b": "x"})
    assert {"b": "x"} in bad and {"a": 1, "b": "x", "extra_key": 0} in bad and {"a": 1, "b": "X"} in bad
    assert all(not d.conforms(v) for v in bad)
    assert all(d.conforms(v) for v in edges(d, {"a": 1, "b": "x"}))


def test_a_problem_without_a_declaration_fails_the_check(tmp_path):
    from practice import checker
    copy = _copy(P164, tmp_path)
    copy.declaration_path.unlink()
    assert any("no declare.py" in i for i in checker._declaration_issues(catalog.load_problem(copy.folder)))
