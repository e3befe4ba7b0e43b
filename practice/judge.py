"""Entry point: ``python practice/judge.py 184`` (see ``practice/cli.py`` for the verbs)."""
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the folder above ``practice`` importable, and drop this folder from
    # sys.path so that its modules are only ever imported as ``practice.<name>``.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))


def _environment_problem():
    """One line saying how to run the judge when this Python cannot, else None."""
    import importlib.util
    why = [m for m in ("filelock", "pytest") if importlib.util.find_spec(m) is None]
    if sys.version_info < (3, 11):              # pyproject.toml: requires-python >= 3.11
        why.insert(0, "Python %d.%d < 3.11" % sys.version_info[:2])
    if not why:
        return None
    venv = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"
    python = ".venv/bin/python" if venv.exists() else "make venv && .venv/bin/python"
    args = " ".join(sys.argv[1:]) or "list"
    return (f"这个 Python（{sys.executable}）运行不了评测器（{', '.join(why)}）：请用 `make lab`，或 "
            f"`{python} practice/judge.py {args}` / this Python cannot run the judge; use `make lab` "
            f"or `{python} practice/judge.py {args}`")


_PROBLEM = _environment_problem() if __name__ == "__main__" else None
if _PROBLEM:
    print(_PROBLEM, file=sys.stderr)
    raise SystemExit(2)

from practice.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
