"""Entry point: ``python practice/judge.py 184`` (see ``practice/cli.py`` for the verbs)."""
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the folder above ``practice`` importable, and drop this folder from
    # sys.path so that its modules are only ever imported as ``practice.<name>``.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))


def _environment_problem() -> str | None:
    """One line saying how to run the judge when this Python lacks what it needs, else None."""
    import importlib.util
    missing = [m for m in ("filelock", "pytest") if importlib.util.find_spec(m) is None]
    if sys.version_info < (3, 10):
        missing.insert(0, "Python >= 3.10")
    if not missing:
        return None
    venv = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"
    args = " ".join(sys.argv[1:]) or "list"
    return (f"这个 Python（{sys.executable}）缺少 {', '.join(missing)}：请在课程的环境里运行评测器——"
            f"`make lab`，或 `{'.venv/bin/python' if venv.exists() else 'make venv && .venv/bin/python'} "
            f"practice/judge.py {args}` / run it in the course environment: `make lab` or "
            f"`.venv/bin/python practice/judge.py {args}`")


_PROBLEM = _environment_problem() if __name__ == "__main__" else None
if _PROBLEM:
    print(_PROBLEM, file=sys.stderr)
    raise SystemExit(2)

from practice.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
