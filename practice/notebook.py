"""The ``%%judge`` cell magic: ``%load_ext practice``, then a cell starting with ``%%judge 184``.

The cell's code is written to a temporary file and judged by the same sandboxed subprocess as the
command line; the verdict table is shown as HTML. Options: ``--examples``, ``--lang en``.
"""
from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

from . import catalog, progress, workspace
from .i18n import t
from .judging import judge
from .verdicts import Report, render_html, render_text


def judge_source(problem_key: str, source: str, *, examples_only: bool = False,
                 workspace_override: str | None = None, record: bool = True) -> Report:
    """Judge ``source`` (a cell's code) against a problem; record progress for full runs."""
    problem = catalog.find(problem_key)
    if problem is None:
        raise ValueError(t("cli.unknown_problem", "zh", key=problem_key))
    fd, name = tempfile.mkstemp(prefix=f"cell-{problem.id}-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(source)
        report = judge(problem, Path(name), examples_only=examples_only)
    finally:
        os.unlink(name)
    if record and not examples_only:
        progress.record(workspace.workspace_dir(workspace_override), problem.id, report.accepted,
                        report.verdict_key())
    return report


class _Shown:
    """Rich display of a report (HTML in notebooks, text elsewhere)."""

    def __init__(self, report: Report, lang: str):
        self.report, self.lang = report, lang

    def _repr_html_(self) -> str:
        return render_html(self.report, self.lang)

    def __repr__(self) -> str:
        return render_text(self.report, self.lang)


def judge_magic(line: str, cell: str):
    args = shlex.split(line)
    lang = "en" if "--lang=en" in args or ("--lang" in args and args[args.index("--lang") + 1:][:1] == ["en"]) \
        else os.environ.get("PRACTICE_LANG", "zh")
    examples = "--examples" in args
    keys = [a for a in args if not a.startswith("-") and a not in ("zh", "en")]
    if not keys:
        print("usage: %%judge <problem id> [--examples] [--lang en]")
        return None
    try:
        report = judge_source(keys[0], cell, examples_only=examples)
    except ValueError as exc:
        print(exc)
        return None
    return _Shown(report, lang if lang in ("zh", "en") else "zh")


def register(ipython) -> None:
    ipython.register_magic_function(judge_magic, magic_kind="cell", magic_name="judge")
