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


def test_readme_python_examples_print_what_the_readme_says():
    """Every Python block runs; where the next fenced block is a bare one (its printed output), each
    of its lines is a line the code prints."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
    assert any(lang == "python" for lang, _ in blocks)
    checked = 0
    for i, (lang, code) in enumerate(blocks):
        if lang != "python":
            continue
        run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        if i + 1 < len(blocks) and blocks[i + 1][0] == "":
            printed = run.stdout.splitlines()
            for line in blocks[i + 1][1].strip().splitlines():
                assert line in printed, (line, printed)
            checked += 1
    assert checked >= 1
