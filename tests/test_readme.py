"""The README's promises: its make commands exist, and its Python example runs."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def test_quick_start_commands_are_make_targets():
    commands = re.findall(r"^make ([\w-]+)", README, flags=re.M)
    commands += re.findall(r"`make ([\w-]+)`", README)
    assert {"lab", "test"} <= set(commands)
    targets = set(re.findall(r"^([\w-]+):", MAKEFILE, flags=re.M))
    missing = set(commands) - targets
    assert not missing, f"README mentions make targets the Makefile lacks: {missing}"


def test_ci_runs_make_test():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, flags=re.M)


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for code in blocks:
        run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
