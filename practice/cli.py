"""The practice judge's command line: ``python practice/judge.py <verb> ...``.

Exit status: 0 when everything asked for succeeded (for judging: every case passed), 1 when a
case failed or the file could not be judged (or ``check`` found problems), 2 for usage errors and
when a fresh workspace file was just created.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path

from . import catalog, progress, workspace
from .i18n import t
from .judging import judge, limits_for
from .verdicts import _pad, render_text, sandbox_notice

VERBS = ("judge", "test", "start", "reset", "show", "hint", "solution", "list", "progress", "check", "declare")


def _cmd(verb: str, problem_id=None) -> str:
    return f"python practice/judge.py {verb}" + (f" {problem_id}" if problem_id is not None else "")


def _rel(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _common(suppress: bool) -> argparse.ArgumentParser:
    """--lang and --workspace, accepted before or after the verb. On the verbs' parsers the
    default is SUPPRESS, so that a value given before the verb is not overwritten."""
    common = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    common.add_argument("--lang", choices=("zh", "en"), default=default,
                        help="message language (default zh, or PRACTICE_LANG)")
    common.add_argument("--workspace", default=default,
                        help="workspace folder (default practice/workspace, or PRACTICE_WORKSPACE)")
    return common


TIME_LIMIT_RANGE = (0.0, 600.0)     # seconds, exclusive low, inclusive high
MEMORY_MB_RANGE = (128, 65536)      # inclusive


def _parser() -> argparse.ArgumentParser:
    common = _common(suppress=True)
    parser = argparse.ArgumentParser(prog="judge.py", parents=[_common(suppress=False)],
                                     description="Practice judge for the LLM serving course.")
    sub = parser.add_subparsers(dest="verb", required=True)

    def limits_args(p, default=argparse.SUPPRESS):
        p.add_argument("--time-limit", default=default, metavar="SECONDS",
                       help=f"per-case limit in seconds, in ({TIME_LIMIT_RANGE[0]:g}, {TIME_LIMIT_RANGE[1]:g}]")
        p.add_argument("--memory-mb", default=default, metavar="MB",
                       help=f"memory cap of your code in MB, in [{MEMORY_MB_RANGE[0]}, {MEMORY_MB_RANGE[1]}]")

    limits_args(parser, default=None)

    p = sub.add_parser("judge", parents=[common], help="judge your workspace file")
    p.add_argument("problem")
    p.add_argument("--examples", action="store_true")
    limits_args(p)
    p = sub.add_parser("test", parents=[common], help="judge a file")
    p.add_argument("problem")
    p.add_argument("file", nargs="?")
    p.add_argument("--examples", action="store_true", help="run only the worked example")
    limits_args(p)
    for verb in ("start", "show"):
        sub.add_parser(verb, parents=[common]).add_argument("problem")
    p = sub.add_parser("hint", parents=[common], help="one more hint each time")
    p.add_argument("problem")
    p.add_argument("--all", action="store_true", help="every hint at once")
    p = sub.add_parser("reset", parents=[common])
    p.add_argument("problem")
    p.add_argument("--yes", action="store_true")
    p = sub.add_parser("solution", parents=[common])
    p.add_argument("problem")
    p.add_argument("--force", action="store_true")
    sub.add_parser("list", parents=[common])
    sub.add_parser("progress", parents=[common])
    p = sub.add_parser("check", parents=[common], help="maintainers: verify every problem")
    p.add_argument("problems", nargs="*")
    p.add_argument("--mutants", action="store_true",
                   help="also judge single-point mutants of each reference (are the hidden tests sharp?)")
    p = sub.add_parser("declare", parents=[common],
                       help="maintainers: write each problem's input-check block from its declare.py")
    p.add_argument("problems", nargs="*")
    return parser


def parse_limits(time_limit, memory_mb, lang: str = "zh") -> tuple[float | None, int | None]:
    """Validate --time-limit and --memory-mb; raise ValueError with a message naming the option
    and its allowed range."""
    case_s = mem = None
    if time_limit is not None:
        try:
            case_s = float(time_limit)
        except (TypeError, ValueError):
            case_s = math.nan
        low, high = TIME_LIMIT_RANGE
        if not (math.isfinite(case_s) and low < case_s <= high):
            raise ValueError(t("cli.bad_option", lang, option="--time-limit", value=repr(str(time_limit)),
                               allowed=f"({low:g}, {high:g}] s" if lang == "en" else f"({low:g}, {high:g}] 秒内的有限数"))
    if memory_mb is not None:
        text = str(memory_mb).strip()
        low, high = MEMORY_MB_RANGE
        if not (text.isdigit() and low <= int(text) <= high):
            raise ValueError(t("cli.bad_option", lang, option="--memory-mb", value=repr(str(memory_mb)),
                               allowed=f"an integer in [{low}, {high}]" if lang == "en" else f"[{low}, {high}] 之间的整数"))
        mem = int(text)
    return case_s, mem


def _normalise(argv: list[str]) -> list[str]:
    """``judge.py 184`` means ``judge.py judge 184``."""
    takes_value = {"--lang", "--workspace", "--time-limit", "--memory-mb"}  # "--opt=value" is one item
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in takes_value:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        if arg not in VERBS:
            return argv[:i] + ["judge"] + argv[i:]
        return argv
    return argv


class _Ctx:
    def __init__(self, args):
        self.lang = args.lang or os.environ.get("PRACTICE_LANG", "zh")
        if self.lang not in ("zh", "en"):
            self.lang = "zh"
        self.ws = workspace.workspace_dir(args.workspace)

    def out(self, text: str = "") -> None:
        print(text, flush=True)

    def problem(self, key: str):
        problem = catalog.find(key)
        if problem is None:
            print(t("cli.unknown_problem", self.lang, key=key), file=sys.stderr)
        return problem

    def load_progress(self) -> dict:
        data, aside = progress.load(self.ws)
        if aside is not None:
            print(t("cli.progress_reset", self.lang, path=_rel(aside)), file=sys.stderr)
        return data


def _statement(problem, lang: str) -> str:
    head = f"{problem.id}. {problem.display_title(lang)}  [{problem.display_difficulty(lang)}]"
    return head + "\n\n" + problem.statement


def _run_judge(ctx: _Ctx, problem, path: Path, examples: bool, args) -> int:
    if not path.is_file():
        print(t("cli.no_file", ctx.lang, path=path), file=sys.stderr)
        return 2
    case_s, memory_mb = args.time_limit, args.memory_mb
    ctx.out(t("cli.judging", ctx.lang, id=problem.id, title=problem.display_title(ctx.lang), path=_rel(path))
            + (" " + t("cli.examples_only", ctx.lang) if examples else ""))
    limits = limits_for(problem, case_s=case_s, memory_mb=memory_mb)
    report = judge(problem, path, examples_only=examples, limits=limits)
    notice = sandbox_notice(report, ctx.lang)
    if notice:
        print(notice, file=sys.stderr)
    ctx.out()
    ctx.out(render_text(report, ctx.lang))
    if report.interrupted:
        return 130                        # the shell's code for SIGINT; not counted as an attempt
    if not examples:
        _, aside = progress.record(ctx.ws, problem.id, report.accepted, report.verdict_key())
        if aside is not None:
            print(t("cli.progress_reset", ctx.lang, path=_rel(aside)), file=sys.stderr)
    if report.accepted:
        ctx.out(t("cli.examples_passed", ctx.lang) if examples
                else t("cli.all_passed", ctx.lang, cmd=_cmd("solution", problem.id)))
        return 0
    if problem.hint:
        ctx.out(t("cli.try_hint", ctx.lang, cmd=_cmd("hint", problem.id)))
    return 1


def cmd_judge(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    path, created = _start(ctx, problem)
    if created:
        return 2
    return _run_judge(ctx, problem, path, args.examples, args)


def cmd_test(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    path = Path(args.file) if args.file else workspace.learner_file(problem, ctx.ws)
    return _run_judge(ctx, problem, path, args.examples, args)


def cmd_start(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    path, created = _start(ctx, problem)
    if not created:
        ctx.out(t("cli.exists", ctx.lang, path=_rel(path)))
    return 0


def _start(ctx, problem):
    """Copy the starter into the workspace if it is not there; on a fresh copy show the statement."""
    path, created = workspace.start(problem, ctx.ws)
    if created:
        ctx.out(_statement(problem, ctx.lang))
        ctx.out()
        ctx.out(t("cli.started", ctx.lang, path=_rel(path), cmd=_cmd("", problem.id).replace("  ", " ")))
    return path, created


def cmd_reset(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    target = workspace.learner_file(problem, ctx.ws)
    if not args.yes:
        ctx.out(t("cli.reset_confirm", ctx.lang, path=_rel(target)))
        return 2
    path, backup = workspace.reset(problem, ctx.ws)
    ctx.out(t("cli.reset_done", ctx.lang, path=_rel(path), backup=_rel(backup) if backup else "-"))
    return 0


def cmd_show(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    ctx.out(_statement(problem, ctx.lang))
    ctx.out()
    ctx.out(t("cli.edit_here", ctx.lang, path=_rel(workspace.learner_file(problem, ctx.ws))))
    return 0


def cmd_hint(ctx, args) -> int:
    """One more rung of the hint ladder each time (all of them with --all)."""
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    hints = problem.hints
    if not hints:
        ctx.out(t("cli.no_hint", ctx.lang))
        return 0
    shown = len(hints) if getattr(args, "all", False) else progress.next_hint(ctx.ws, problem.id, len(hints))
    for i, text in enumerate(hints[:shown], start=1):
        ctx.out(t("cli.hint_item", ctx.lang, i=i, n=len(hints), text=text))
    if shown < len(hints):
        ctx.out(t("cli.hint_more", ctx.lang, cmd=_cmd("hint", problem.id)))
    else:
        ctx.out(t("cli.hint_last", ctx.lang, n=len(hints), cmd=_cmd("solution", problem.id)))
    return 0


def cmd_solution(ctx, args) -> int:
    problem = ctx.problem(args.problem)
    if problem is None:
        return 2
    data = ctx.load_progress()
    if not args.force and progress.status(data, problem.id) != "solved":
        ctx.out(t("cli.solution_locked", ctx.lang))
        return 1
    ctx.out(problem.explanation)
    ctx.out()
    ctx.out("# " + _rel(problem.solution_path))
    ctx.out(problem.solution_path.read_text(encoding="utf-8"))
    return 0


def _by_chapter(problems):
    """[(chapter, [problems in id order])] in chapter order."""
    chapters: dict[str, list] = {}
    for problem in problems:
        chapters.setdefault(problem.chapter, []).append(problem)
    return sorted(chapters.items())


def cmd_list(ctx, args) -> int:
    data = ctx.load_progress()
    for _, problems in _by_chapter(catalog.all_problems()):
        ctx.out(t("cli.chapter", ctx.lang, chapter=problems[0].display_chapter(ctx.lang)))
        for problem in problems:
            status = t("cli.status." + progress.status(data, problem.id), ctx.lang)
            ctx.out(f"  {problem.id:>4}  {_pad(status, 8)}{_pad(problem.display_difficulty(ctx.lang), 8)}"
                    f"{problem.display_title(ctx.lang)}")
    return 0


def cmd_progress(ctx, args) -> int:
    data = ctx.load_progress()
    problems = catalog.all_problems()
    states = {p.id: progress.status(data, p.id) for p in problems}
    for _, group in _by_chapter(problems):
        ctx.out(t("cli.progress_chapter", ctx.lang, chapter=group[0].display_chapter(ctx.lang),
                  solved=sum(states[p.id] == "solved" for p in group), total=len(group),
                  tried=sum(states[p.id] == "tried" for p in group)))
    solved = sum(s == "solved" for s in states.values())
    tried = sum(s == "tried" for s in states.values())
    ctx.out(t("cli.progress", ctx.lang, solved=solved, total=len(problems), tried=tried))
    _say_next(ctx, problems, states)
    return 0


def next_problem(problems, states: dict):
    """The problem to work on next: the first one tried but not solved, else the first untouched
    one (catalog order), else None."""
    return next((p for p in problems if states[p.id] == "tried"), None) or \
        next((p for p in problems if states[p.id] == "new"), None)


def _say_next(ctx, problems, states) -> None:
    nxt = next_problem(problems, states)
    if nxt is not None:
        key = "cli.progress_continue" if states[nxt.id] == "tried" else "cli.progress_next"
        ctx.out(t(key, ctx.lang, id=nxt.id, title=nxt.display_title(ctx.lang),
                  cmd=_cmd("", nxt.id).replace("  ", " ")))
    elif problems:
        ctx.out(t("cli.all_solved", ctx.lang))


def cmd_welcome(ctx) -> int:
    """A bare ``judge.py``: the next step, then the verbs."""
    data = ctx.load_progress()
    problems = catalog.all_problems()
    states = {p.id: progress.status(data, p.id) for p in problems}
    _say_next(ctx, problems, states)
    ctx.out(t("cli.welcome", ctx.lang))
    return 0


def _first_positional(argv: list[str]) -> int | None:
    takes_value = {"--lang", "--workspace", "--time-limit", "--memory-mb"}
    i = 0
    while i < len(argv):
        if argv[i] in takes_value:
            i += 2
        elif argv[i].startswith("-"):
            i += 1
        else:
            return i
    return None


def _mistyped_verb(argv: list[str]) -> tuple[str, str] | None:
    """(typed, suggested verb) when the first word is neither a verb nor a problem but is close
    to a verb (``hnt 139`` -> ``hint``)."""
    import difflib
    i = _first_positional(argv)
    if i is None or argv[i] in VERBS or catalog.find(argv[i]) is not None:
        return None
    close = difflib.get_close_matches(argv[i].lower(), VERBS, n=1, cutoff=0.6)
    return (argv[i], close[0]) if close else None


def cmd_check(ctx, args) -> int:
    from .checker import check_all
    problems = args.problems or None
    issues, count = check_all(problems, lang=ctx.lang, log=ctx.out, mutants=args.mutants)
    for issue in issues:
        ctx.out("  - " + issue)
    if issues:
        ctx.out(t("cli.check_fail", ctx.lang, n=len(issues)))
        return 1
    ctx.out(t("cli.check_ok", ctx.lang, n=count))
    return 0


def cmd_declare(ctx, args) -> int:
    """Rewrite the generated input-check block of each problem that has a declare.py."""
    from . import declaration
    wanted = {str(k) for k in args.problems}
    status = 0
    for problem in catalog.all_problems():
        if wanted and str(problem.id) not in wanted and problem.key not in wanted:
            continue
        if not problem.declaration_path.is_file():
            if wanted:
                ctx.out(f"skip {problem.key}: no declare.py")
            continue
        try:
            changed = declaration.write(problem)
        except Exception as exc:  # noqa: BLE001 - a maintainer's broken declaration: say which
            ctx.out(f"FAIL {problem.key}: {type(exc).__name__}: {exc}")
            status = 1
            continue
        ctx.out(f"{'wrote' if changed else 'same '} {problem.key}")
    return status


COMMANDS = {"judge": cmd_judge, "test": cmd_test, "start": cmd_start, "reset": cmd_reset,
            "show": cmd_show, "hint": cmd_hint, "solution": cmd_solution, "list": cmd_list,
            "progress": cmd_progress, "check": cmd_check, "declare": cmd_declare}


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C must stop a run even when the parent started us with SIGINT ignored (Python then keeps
    # it ignored: a shell's background job, or a process that once loaded the judge's pytest plugin).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError):
            pass
    argv = list(sys.argv[1:] if argv is None else argv)
    lang_early = os.environ.get("PRACTICE_LANG", "zh")
    if "--lang" in argv[:-1]:
        lang_early = argv[argv.index("--lang") + 1]
    lang_early = lang_early if lang_early in ("zh", "en") else "zh"
    if _first_positional(argv) is None and not any(a in ("-h", "--help") for a in argv):
        args = _parser().parse_args(argv + ["list"])      # options only: validate them, then welcome
        return cmd_welcome(_Ctx(args))
    typo = _mistyped_verb(argv)
    if typo is not None:
        i = _first_positional(argv)
        fixed = ["python practice/judge.py", typo[1]] + argv[i + 1:]
        print(t("cli.did_you_mean", lang_early, typed=typo[0], cmd=" ".join(fixed)), file=sys.stderr)
        return 2
    args = _parser().parse_args(_normalise(argv))
    ctx = _Ctx(args)
    try:                                  # checked once here; _run_judge takes the parsed values
        args.time_limit, args.memory_mb = parse_limits(getattr(args, "time_limit", None),
                                                       getattr(args, "memory_mb", None), ctx.lang)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        return COMMANDS[args.verb](ctx, args)
    except BrokenPipeError:  # e.g. piped into `head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
