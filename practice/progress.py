"""Progress in ``<workspace>/.progress.json``: attempts and first acceptance per problem.

Only the judge writes it (the learner's code runs in a worker that cannot reach the workspace
where Landlock is available). Every read-modify-write happens inside an exclusive lock
(``.progress.json.lock``, via ``filelock``), so concurrent judges never lose an attempt or an
acceptance; the write itself is atomic (temporary file + ``os.replace``). A file that cannot be
read as progress is renamed aside (``.progress.json.corrupt-<time>``) and a fresh one is started;
reading progress never raises.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from filelock import FileLock

from .workspace import atomic_write_bytes

FILE_NAME = ".progress.json"
LOCK_NAME = ".progress.json.lock"
LOCK_TIMEOUT_S = 60
VERSION = 1


def _lock(workspace: Path) -> FileLock:
    workspace.mkdir(parents=True, exist_ok=True)
    return FileLock(str(workspace / LOCK_NAME), timeout=LOCK_TIMEOUT_S)


def progress_path(workspace: Path) -> Path:
    return workspace / FILE_NAME


def _valid(data) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("problems"), dict):
        return False
    for entry in data["problems"].values():
        if not isinstance(entry, dict) or not isinstance(entry.get("attempts", 0), int):
            return False
    return True


def load(workspace: Path) -> tuple[dict, Path | None]:
    """Return (progress, path the corrupt file was moved to or None)."""
    if not progress_path(workspace).exists():
        return {"version": VERSION, "problems": {}}, None
    with _lock(workspace):
        return _load(workspace)


def _load(workspace: Path) -> tuple[dict, Path | None]:
    path = progress_path(workspace)
    fresh = {"version": VERSION, "problems": {}}
    if not path.exists():
        return fresh, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if _valid(data):
            return data, None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        pass
    aside = path.with_name(f"{FILE_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while aside.exists():
        aside = path.with_name(f"{FILE_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        n += 1
    try:
        path.replace(aside)
    except OSError:
        aside = None
    return fresh, aside


def save(workspace: Path, data: dict) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    atomic_write_bytes(progress_path(workspace), text.encode("utf-8"))


def record(workspace: Path, problem_id: int, accepted: bool, verdict: str) -> tuple[dict, Path | None]:
    """Count one judged attempt; remember the first acceptance (all under the lock)."""
    with _lock(workspace):
        return _record(workspace, problem_id, accepted, verdict)


def _record(workspace: Path, problem_id: int, accepted: bool, verdict: str) -> tuple[dict, Path | None]:
    data, aside = _load(workspace)
    entry = data["problems"].setdefault(str(problem_id), {"attempts": 0, "accepted_at": None})
    entry["attempts"] = int(entry.get("attempts", 0)) + 1
    entry["last_verdict"] = verdict
    entry["last_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    if accepted and not entry.get("accepted_at"):
        entry["accepted_at"] = entry["last_at"]
    save(workspace, data)
    return data, aside


def next_hint(workspace: Path, problem_id: int, available: int) -> int:
    """Show one more hint: how many hints the learner may now see (at most ``available``),
    remembered in the progress file (under the lock)."""
    with _lock(workspace):
        data, _ = _load(workspace)
        entry = data["problems"].setdefault(str(problem_id), {"attempts": 0, "accepted_at": None})
        shown = min(available, max(0, int(entry.get("hints_shown", 0) or 0)) + 1)
        entry["hints_shown"] = shown
        save(workspace, data)
        return shown


def status(data: dict, problem_id: int) -> str:
    entry = data.get("problems", {}).get(str(problem_id))
    if not entry:
        return "new"
    if entry.get("accepted_at"):
        return "solved"
    return "tried" if entry.get("attempts", 0) > 0 else "new"
