"""The learner's workspace: where their files live, and copying starters there safely.

The default folder is ``practice/workspace`` next to this package (ignored by git). Set
``PRACTICE_WORKSPACE`` or pass ``--workspace`` to use another folder (the tests do).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from .catalog import Problem

DEFAULT_WORKSPACE = Path(__file__).resolve().parent / "workspace"


def workspace_dir(override: str | os.PathLike | None = None) -> Path:
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get("PRACTICE_WORKSPACE")
    return Path(env).expanduser().resolve() if env else DEFAULT_WORKSPACE


def learner_file(problem: Problem, workspace: Path) -> Path:
    return workspace / f"{problem.key}.py"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and ``os.replace``: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def start(problem: Problem, workspace: Path) -> tuple[Path, bool]:
    """Copy the starter into the workspace unless a file is already there. (path, created)."""
    target = learner_file(problem, workspace)
    if target.exists():
        return target, False
    atomic_write_bytes(target, problem.starter_path.read_bytes())
    return target, True


def reset(problem: Problem, workspace: Path) -> tuple[Path, Path | None]:
    """Back the learner's file up, then put the starter in its place. (path, backup or None)."""
    target = learner_file(problem, workspace)
    backup = None
    if target.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup_dir = workspace / ".backup"
        backup_dir.mkdir(parents=True, exist_ok=True)
        backup = backup_dir / f"{problem.key}.{stamp}.py"
        n = 1
        while backup.exists():
            backup = backup_dir / f"{problem.key}.{stamp}-{n}.py"
            n += 1
        shutil.copy2(target, backup)
    atomic_write_bytes(target, problem.starter_path.read_bytes())
    return target, backup
