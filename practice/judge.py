"""Entry point: ``python practice/judge.py 184`` (see ``practice/cli.py`` for the verbs)."""
import sys
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make the folder above ``practice`` importable, and drop this folder from
    # sys.path so that its modules are only ever imported as ``practice.<name>``.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))

from practice.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
