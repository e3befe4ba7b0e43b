"""Tests of the practice judge: crafted submissions for every failure mode, the command line,
progress and the workspace, the notebook magic, and the maintainers' check.

Everything is written under pytest's tmp_path (the workspace via PRACTICE_WORKSPACE); nothing
touches practice/workspace/.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from practice import catalog, progress, workspace
from practice.judging import judge
from practice.runner import Limits, judge_file
from practice.verdicts import render_text

ROOT = Path(__file__).resolve().parents[1]
P184 = catalog.find("184")
SOLUTION = P184.solution_path.read_text(encoding="utf-8")
FAST = Limits(case_s=1.0, run_s=20.0, memory_mb=1024)


def _file(tmp_path: Path, source: str, name: str = "sub.py") -> Path:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


def _judge(tmp_path, source, examples_only=True, limits=FAST):
    return judge(P184, _file(tmp_path, source), examples_only=examples_only, limits=limits)


def _cli(*args, workspace_dir: Path, cwd: Path = ROOT, script: str = "practice/judge.py", timeout=60):
    env = dict(os.environ, PRACTICE_WORKSPACE=str(workspace_dir))
    env.pop("PRACTICE_LANG", None)
    proc = subprocess.run([sys.executable, str(ROOT / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


# --- verdicts for crafted submissions --------------------------------------------------------

def test_reference_passes_every_case(tmp_path):
    report = _judge(tmp_path, SOLUTION, examples_only=False)
    assert report.cannot is None
    assert report.total > 20 and report.passed == report.total and report.accepted


def test_starter_fails_every_case(tmp_path):
    report = judge(P184, P184.starter_path, limits=FAST)
    assert report.total > 20 and report.passed == 0
    assert {c.verdict for c in report.cases} == {"error"}
    assert all(c.reason["code"] == "not_implemented" for c in report.cases)


def test_one_percent_error_is_wrong_answer(tmp_path):
    source = SOLUTION.replace("return bytes_read / (bandwidth_gbs * 1e9) * 1e3 + overhead_ms",
                              "return bytes_read / (bandwidth_gbs * 1e9) * 1e3 * 1.01 + overhead_ms")
    assert source != SOLUTION
    report = _judge(tmp_path, source, examples_only=False)
    assert not report.accepted
    example = report.cases[0]
    assert example.is_example and example.verdict == "wrong"
    assert example.details["expected"]["step_ms"] == pytest.approx(20.27209552238806)
    assert example.details["got"]["step_ms"] == pytest.approx(20.27209552238806 * 1.01)
    text = render_text(report)
    assert "答案错误" in text and "期望" in text and "实际" in text
    # A hidden case says why, never what was expected.
    hidden = next(c for c in report.cases if c.case.endswith("test_tpot_bound"))
    assert hidden.verdict == "wrong" and hidden.details is None
    line = next(ln for ln in text.splitlines() if "tpot_bound" in ln)
    assert "batch" in line and "246" not in line and "11.99" not in text


@pytest.mark.parametrize("scale", [1.01, 0.99])
def test_one_percent_error_in_prefill_fails(tmp_path, scale):
    source = SOLUTION.replace("return gpus_per_instance * gpu_tflops * 1e12 * mfu / flops_per_request",
                              f"return gpus_per_instance * gpu_tflops * 1e12 * mfu / flops_per_request * {scale}")
    assert source != SOLUTION
    report = _judge(tmp_path, source, examples_only=False)
    assert not report.accepted and report.cases[0].verdict == "wrong"


CRAFTED = {
    # name: (code appended to the reference or prepended to it, where, expected verdict, reason code)
    "infinite_loop": ("def plan(*a, **k):\n    while True:\n        pass\n", "after", "timeout", "timeout"),
    "swallowed_alarm": ("def plan(*a, **k):\n    while True:\n        try:\n            while True:\n"
                        "                pass\n        except BaseException:\n            pass\n",
                        "after", "timeout", "timeout"),
    "os_exit_in_call": ("import os\ndef plan(*a, **k):\n    os._exit(3)\n", "after", "error", "died"),
    "sys_exit_in_call": ("import sys\ndef plan(*a, **k):\n    sys.exit(4)\n", "after", "error", "sys_exit"),
    "exception": ("def plan(*a, **k):\n    return 1 / 0\n", "after", "error", "exception"),
    "huge_allocation": ("def plan(*a, **k):\n    return bytearray(16 * 1024 ** 3)\n", "after", "memory", "memory"),
    "numpy_allocation": ("import numpy as np\ndef plan(*a, **k):\n    return np.ones((60000, 60000))\n",
                         "after", "memory", "memory"),
    "nan": ("_p = plan\ndef plan(*a, **k):\n    r = _p(*a, **k)\n    r['step_ms'] = float('nan')\n    return r\n",
            "after", "wrong", "nan"),
    "wrong_type": ("_p = plan\ndef plan(*a, **k):\n    return list(_p(*a, **k).values())\n", "after", "wrong", "type"),
    "float_batch": ("_p = plan\ndef plan(*a, **k):\n    r = _p(*a, **k)\n    r['batch'] = float(r['batch'])\n"
                    "    return r\n", "after", "wrong", "type"),
    "missing_key": ("_p = plan\ndef plan(*a, **k):\n    r = _p(*a, **k)\n    del r['gpus']\n    return r\n",
                    "after", "wrong", "missing_keys"),
    "missing_function": ("del plan\n", "after", "wrong", "no_function"),
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_failure_mode_verdicts(tmp_path, name):
    code, where, verdict, reason = CRAFTED[name]
    source = SOLUTION + "\n\n" + code if where == "after" else code + SOLUTION
    started = time.monotonic()
    report = _judge(tmp_path, source)
    assert time.monotonic() - started < 10
    assert report.cannot is None and report.total == 1
    case = report.cases[0]
    assert (case.verdict, case.reason.get("code")) == (verdict, reason)
    assert not report.accepted
    assert "通过 0 / 1" in render_text(report)


def test_runtime_error_names_the_learner_line(tmp_path):
    source = SOLUTION + "\n\ndef plan(*a, **k):\n    return 1 / 0\n"
    report = _judge(tmp_path, source)
    line = len(SOLUTION.splitlines()) + 4  # "\n\n" adds one empty line before the def
    assert report.cases[0].reason["line"] == line
    assert f"第 {line} 行" in render_text(report)


def test_megabytes_of_printing_are_truncated(tmp_path):
    source = SOLUTION + "\n\n_p = plan\ndef plan(*a, **k):\n    for _ in range(100000):\n" \
                        "        print('x' * 60)\n    return _p(*a, **k)\n"
    report = _judge(tmp_path, source)
    case = report.cases[0]
    assert case.verdict == "pass"
    assert case.output_chars > 5_000_000 and len(case.output) <= 2048


CANNOT = {
    "syntax_error": ("def plan(:\n    pass\n", "syntax"),
    "import_error": ("import no_such_module_here\n", "exception"),
    "sys_exit_at_import": ("import sys\nsys.exit(1)\n", "exit"),
    "os_exit_at_import": ("import os\nos._exit(0)\n", "no_collect"),
    "loop_at_import": ("while True:\n    pass\n", "timeout"),
    "memory_at_import": ("x = bytearray(16 * 1024 ** 3)\n", "memory"),
}


@pytest.mark.parametrize("name", list(CANNOT))
def test_cannot_judge(tmp_path, name):
    code, kind = CANNOT[name]
    report = _judge(tmp_path, code + SOLUTION)
    assert report.cannot is not None and report.cannot["kind"] == kind
    assert not report.accepted and report.verdict_key() == "cannot"
    text = render_text(report)
    assert text.startswith("无法评测")
    if name in ("syntax_error", "import_error"):
        assert "第 1 行" in text


def test_os_exit_in_every_call_is_bounded(tmp_path):
    source = SOLUTION + "\n\nimport os\ndef plan(*a, **k):\n    os._exit(1)\n"
    started = time.monotonic()
    report = _judge(tmp_path, source, examples_only=False)
    assert time.monotonic() - started < 15
    died = [c for c in report.cases if c.verdict == "error" and c.reason.get("code") == "died"]
    skipped = [c for c in report.cases if c.verdict == "skipped"]
    assert died and skipped and not report.accepted
    # Cases that do not call plan() were still judged and passed.
    assert any(c.passed for c in report.cases)


def test_whole_run_limit(tmp_path):
    # every function loops: two timeouts each (then their cases are judged at once) pass the run's 3 s
    source = SOLUTION + "".join(f"\n\ndef {name}(*a, **k):\n    while True:\n        pass\n"
                                for name in P184.functions)
    limits = Limits(case_s=1.0, run_s=3.0, memory_mb=1024)
    started = time.monotonic()
    report = _judge(tmp_path, source, examples_only=False, limits=limits)
    assert time.monotonic() - started < 8
    verdicts = {c.verdict for c in report.cases}
    assert "timeout" in verdicts and "skipped" in verdicts
    assert any(c.reason.get("code") == "run_limit" for c in report.cases)


def test_reference_is_not_imported_as_submission(tmp_path):
    # A file that defines nothing must not be judged with the reference's functions.
    report = _judge(tmp_path, "X = 1\n", examples_only=False)
    assert report.passed == 0 or all(not c.case.endswith("worked_example") for c in report.cases if c.passed)
    assert report.cases[0].reason["code"] == "no_function"


def test_judging_changes_no_files(tmp_path):
    learner = _file(tmp_path, SOLUTION + "\nopen(__file__, 'a').write('# changed')\n")
    before_learner = learner.read_bytes()
    before_problems = _tree_digest(catalog.PROBLEMS_DIR)
    judge(P184, learner, examples_only=True, limits=FAST)
    assert learner.read_bytes() == before_learner
    assert _tree_digest(catalog.PROBLEMS_DIR) == before_problems


# --- command line ----------------------------------------------------------------------------

def test_cli_start_judge_solution_flow(tmp_path):
    ws = tmp_path / "ws"
    rc, out = _cli("184", workspace_dir=ws)
    assert rc == 2 and "184" in out and "plan(" in out
    target = ws / "184-deployment-size.py"
    assert target.read_bytes() == P184.starter_path.read_bytes()

    rc, out = _cli("184", workspace_dir=ws)
    assert rc == 1 and "运行错误" in out and "通过 0 /" in out
    rc, out = _cli("solution", "184", workspace_dir=ws)
    assert rc == 1 and "def plan" not in out

    target.write_text(SOLUTION, encoding="utf-8")
    rc, out = _cli("184", workspace_dir=ws, script="judge.py")  # the top-level forwarder
    assert rc == 0 and re.search(r"通过 (\d+) / \1\n", out) and "全部通过" in out
    data = json.loads((ws / ".progress.json").read_text(encoding="utf-8"))
    assert data["problems"]["184"]["attempts"] == 2 and data["problems"]["184"]["accepted_at"]
    rc, out = _cli("solution", "184", workspace_dir=ws)
    assert rc == 0 and "def plan" in out
    rc, out = _cli("list", workspace_dir=ws)
    assert rc == 0 and any("184" in ln and "已通过" in ln for ln in out.splitlines())
    assert any("126" in ln and "未开始" in ln for ln in out.splitlines())
    rc, out = _cli("progress", workspace_dir=ws)
    assert rc == 0 and "已通过 1 /" in out


def test_cli_examples_only_and_english(tmp_path):
    sub = _file(tmp_path, SOLUTION)
    rc, out = _cli("test", "184", str(sub), "--examples", "--lang", "en", workspace_dir=tmp_path / "ws")
    assert rc == 0 and "Accepted" in out and "Passed 1 / 1" in out
    assert not (tmp_path / "ws" / ".progress.json").exists()  # examples-only runs are not attempts


def test_cli_failure_exit_status_and_hint(tmp_path):
    sub = _file(tmp_path, "def plan(:\n")
    rc, out = _cli("test", "184", str(sub), workspace_dir=tmp_path / "ws")
    assert rc == 1 and "无法评测" in out and "第 1 行" in out
    rc, out = _cli("hint", "184", workspace_dir=tmp_path / "ws")
    assert rc == 0 and out.strip()
    rc, out = _cli("999", workspace_dir=tmp_path / "ws")
    assert rc == 2


def test_cli_start_never_overwrites_and_reset_needs_yes(tmp_path):
    ws = tmp_path / "ws"
    rc, _ = _cli("start", "126", workspace_dir=ws)
    target = ws / "126-latency-metrics.py"
    assert rc == 0 and target.exists()
    target.write_text("# my work\n", encoding="utf-8")
    rc, out = _cli("start", "126", workspace_dir=ws)
    assert rc == 0 and target.read_text(encoding="utf-8") == "# my work\n"
    rc, out = _cli("reset", "126", workspace_dir=ws)
    assert rc == 2 and target.read_text(encoding="utf-8") == "# my work\n"
    rc, out = _cli("reset", "126", "--yes", workspace_dir=ws)
    assert rc == 0
    assert target.read_bytes() == catalog.find("126").starter_path.read_bytes()
    backups = list((ws / ".backup").glob("126-latency-metrics.*.py"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == "# my work\n"


def test_corrupt_progress_is_kept_aside(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".progress.json").write_text("{not json", encoding="utf-8")
    rc, out = _cli("list", workspace_dir=ws)
    assert rc == 0
    aside = list(ws.glob(".progress.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text(encoding="utf-8") == "{not json"
    data, moved = progress.record(ws, 184, False, "wrong")
    assert moved is None and data["problems"]["184"]["attempts"] == 1
    (ws / ".progress.json").write_text('{"problems": {"184": {"attempts": "x"}}}', encoding="utf-8")
    data, moved = progress.load(ws)
    assert moved is not None and data["problems"] == {}


def test_progress_writes_are_atomic(tmp_path, monkeypatch):
    progress.record(tmp_path, 150, True, "pass")
    before = (tmp_path / ".progress.json").read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        progress.record(tmp_path, 150, False, "wrong")
    assert (tmp_path / ".progress.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".progress.json", progress.LOCK_NAME]


# --- catalog, notebook, maintainers' check ---------------------------------------------------

def test_catalog_ids_and_front_matter():
    problems = catalog.all_problems()
    ids = [p.id for p in problems]
    assert ids == sorted(set(ids)) and {126, 147, 149, 150, 167, 184} <= set(ids)
    for problem in problems:
        assert problem.folder.name == problem.key
        assert not (problem.folder / "__init__.py").exists()  # data, not packages
        assert problem.meta["difficulty"] in catalog.DIFFICULTIES
        assert problem.example["function"] in problem.functions
    assert catalog.find("184-deployment-size").id == 184 and catalog.find("deployment-size").id == 184
    assert catalog.find("nope") is None


def test_front_matter_parser():
    meta, body = catalog.parse_front_matter("---\nid: 7\ntags: [a, b]\ntitle: 标题\n---\nbody\n")
    assert meta == {"id": 7, "tags": ["a", "b"], "title": "标题"} and body == "body\n"
    with pytest.raises(catalog.FrontMatterError):
        catalog.parse_front_matter("no front matter")


def test_notebook_magic(tmp_path, monkeypatch):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("PRACTICE_WORKSPACE", str(tmp_path))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "practice")
    source = catalog.find("150").solution_path.read_text(encoding="utf-8")
    shown = shell.run_cell_magic("judge", "150", source)
    assert shown.report.accepted and "通过" in shown._repr_html_()
    shown = shell.run_cell_magic("judge", "150 --lang en", "def best_draft_len(*a):\n    return {}\n")
    assert not shown.report.accepted and "Wrong Answer" in shown._repr_html_()
    assert progress.status(progress.load(tmp_path)[0], 150) == "solved"


@pytest.mark.timeout(1800)
def test_maintainer_check_passes():
    """`judge.py check --mutants`, the check `make test` relies on: every problem complete and
    consistent, and its hidden tests catching >= 95% of the reference's mutants."""
    from practice.checker import check_all

    issues, count = check_all(log=lambda *_: None, mutants=True)
    assert issues == [], "\n".join(issues)
    assert count >= 6


def test_maintainer_check_catches_a_wrong_statement(tmp_path):
    import shutil

    from practice import checker

    root = tmp_path / "problems"
    shutil.copytree(P184.folder, root / P184.folder.name)
    md = root / P184.folder.name / "problem.md"
    md.write_text(md.read_text(encoding="utf-8").replace('"gpus": 232', '"gpus": 233'), encoding="utf-8")
    problem = catalog.load_problem(root / P184.folder.name)
    issues = checker.static_issues(problem)
    assert any("differs" in i for i in issues)


def test_mutants_are_made_and_caught(tmp_path):
    from practice import mutants

    made = mutants.make_mutants("import math\n\ndef f(a, b):\n    \"\"\"doc 1\"\"\"\n"
                                "    if a < 0:\n        raise ValueError(f'a {a + 1}')\n"
                                "    return max(a, b) * 2 + math.floor(b / 3)\n")
    kinds = {m.description for m in made}
    assert "a < 0  ->  a <= 0" in kinds and "max(a, b)  ->  min(a, b)" in kinds
    assert any("floor" in k and "ceil" in k for k in kinds) and "2  ->  3" in kinds
    assert not any("a + 1" in k for k in kinds)        # error messages are left alone
    assert len({m.id for m in made}) == len(made)
    score = mutants.check_problem(catalog.find("150"))
    assert score.error is None and score.judged == score.total > 0 and score.score >= mutants.TARGET


def test_maintainer_check_compares_input_checks(tmp_path):
    import shutil

    from practice import checker

    root = tmp_path / "problems"
    shutil.copytree(P184.folder, root / P184.folder.name)
    md = root / P184.folder.name / "problem.md"
    text = md.read_text(encoding="utf-8")
    head, sep, rest = text.partition("### 输入检查")
    md.write_text(head + sep + rest.replace("`overhead_ms`", "开销"), encoding="utf-8")
    copy = catalog.load_problem(root / P184.folder.name)
    assert any("block differs from declare.py" in i for i in checker._declaration_issues(copy))
    (copy.folder / "declare.py").unlink()     # without a declaration, the hand-written comparison
    issues = checker.input_check_issues(catalog.load_problem(root / P184.folder.name))
    assert any("'overhead_ms'" in i and "does not name it" in i for i in issues)


def test_list_and_progress_group_by_chapter(tmp_path):
    rc, out = _cli("list", workspace_dir=tmp_path)
    assert rc == 0 and "章节 01" in out and "章节 02" in out
    assert out.index("章节 01") < out.index("126") < out.index("章节 02") < out.index("184")
    rc, out = _cli("progress", "--lang", "en", workspace_dir=tmp_path)
    assert rc == 0 and "Chapter 02 System design: solved 0 of" in out


def test_hint_ladder_shows_one_more_hint_each_time(tmp_path):
    from practice import catalog, progress
    problem = catalog.find("141")
    hints = problem.hints
    assert len(hints) >= 2 and all(h and not h.startswith("- ") for h in hints)
    seen = []
    for k in range(1, len(hints) + 2):
        out = _cli("hint", "141", workspace_dir=tmp_path)[1]
        shown = min(k, len(hints))
        assert f"提示 {shown}/{len(hints)}" in out and f"提示 {shown + 1}/" not in out
        assert ("再运行一次" in out) == (shown < len(hints))
        seen.append(shown)
    assert seen[-1] == seen[-2] == len(hints)
    data, _ = progress.load(tmp_path)
    assert data["problems"]["141"]["hints_shown"] == len(hints) and data["problems"]["141"]["attempts"] == 0
    fresh = tmp_path / "fresh"
    out = _cli("--lang", "en", "hint", "141", "--all", workspace_dir=fresh)[1]
    assert f"Hint {len(hints)}/{len(hints)}" in out and not (fresh / progress.FILE_NAME).exists()


def test_every_problem_has_a_hint_ladder():
    from practice import catalog
    for problem in catalog.all_problems():
        assert len(problem.hints) >= 2, problem.key
