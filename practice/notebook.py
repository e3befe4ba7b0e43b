"""The ``%%judge`` cell magic: ``%load_ext practice``, then a cell starting with ``%%judge 184``.

The cell's code is written to a temporary file and judged by the same sandboxed subprocess as the
command line; the verdict table is shown as HTML. Options: ``--examples``, ``--lang en``, ``--time-limit S``, ``--memory-mb MB`` (validated as on the
command line).
"""
from __future__ import annotations

import argparse
import html
import os
import shlex
import tempfile
from pathlib import Path

from . import catalog, progress, workspace
from .i18n import t
from .cli import parse_limits
from .judging import judge, limits_for
from .verdicts import Report, render_html, render_text, sandbox_notice


_NOTICE_SHOWN = False


def judge_source(problem_key: str, source: str, *, examples_only: bool = False,
                 workspace_override: str | None = None, record: bool = True,
                 case_s: float | None = None, memory_mb: int | None = None) -> Report:
    """Judge ``source`` (a cell's code) against a problem; record progress for full runs.

    The same path as the command line: the cell is written to a temporary file and judged by
    ``practice.judging.judge``, so both give the same verdicts.
    """
    problem = catalog.find(problem_key)
    if problem is None:
        raise ValueError(t("cli.unknown_problem", "zh", key=problem_key))
    fd, name = tempfile.mkstemp(prefix=f"cell-{problem.id}-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(source)
        report = judge(problem, Path(name), examples_only=examples_only,
                       limits=limits_for(problem, case_s=case_s, memory_mb=memory_mb))
    finally:
        os.unlink(name)
    if record and not examples_only and not report.interrupted:   # Ctrl-C: not an attempt
        progress.record(workspace.workspace_dir(workspace_override), problem.id, report.accepted,
                        report.verdict_key())
    return report


class _Shown:
    """Rich display of a report (HTML in notebooks, text elsewhere)."""

    def __init__(self, report: Report, lang: str, notice: str | None = None):
        self.report, self.lang, self.notice = report, lang, notice

    def _repr_html_(self) -> str:
        extra = f"<p><i>{html.escape(self.notice)}</i></p>" if self.notice else ""
        return extra + render_html(self.report, self.lang)

    def __repr__(self) -> str:
        return (self.notice + "\n\n" if self.notice else "") + render_text(self.report, self.lang)


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never SystemExit inside a kernel
        raise _Usage(message)


def _magic_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%%judge", add_help=False)
    parser.add_argument("problem")
    parser.add_argument("--examples", action="store_true")
    parser.add_argument("--lang", choices=("zh", "en"), default=None)
    parser.add_argument("--time-limit", default=None)
    parser.add_argument("--memory-mb", default=None)
    parser.add_argument("--workspace", default=None)
    return parser


def judge_magic(line: str, cell: str):
    global _NOTICE_SHOWN
    parser = _magic_parser()
    try:
        args = parser.parse_args(shlex.split(line))
    except (_Usage, ValueError) as exc:
        print(f"{exc}\nusage: %%judge <problem id> [--examples] [--lang en] [--time-limit S] [--memory-mb MB]")
        return None
    lang = args.lang or os.environ.get("PRACTICE_LANG", "zh")
    lang = lang if lang in ("zh", "en") else "zh"
    try:
        case_s, memory_mb = parse_limits(args.time_limit, args.memory_mb, lang)
        report = judge_source(args.problem, cell, examples_only=args.examples,
                              workspace_override=args.workspace, case_s=case_s, memory_mb=memory_mb)
    except ValueError as exc:
        print(exc)
        return None
    notice = sandbox_notice(report, lang)
    if notice and not _NOTICE_SHOWN:
        _NOTICE_SHOWN = True
    else:
        notice = None
    return _Shown(report, lang, notice)


def register(ipython) -> None:
    ipython.register_magic_function(judge_magic, magic_kind="cell", magic_name="judge")
