"""Shortcut for ``python practice/judge.py ...`` from the repository root."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from practice.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
