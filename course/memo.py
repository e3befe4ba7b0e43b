"""Answers a panel has computed before, shipped with the course, so a move answers at once.

    @memo.shipped("ch03.gateway", "course/ch03.py")
    def gateway(router, instances, ...): ...          # computed live unless the table holds the call

    python -m course.memo build 03                    # compute chapter 03's table over its grid
    python -m course.memo status                      # which tables match the code as it is now

A panel whose every position needs a simulation (a capacity search, a fleet run) cannot answer a
new position within the panels' budget (0.1 s median, 0.3 s worst; ``benchmarks/bench_panel.py``).
Its positions are few and discrete, so the answers are computed once, by ``build``, and stored in
``data/panel_tables/<name>-<fingerprint>.pkl.gz``: one entry per call, keyed by the exact
arguments (their ``repr``), in a file named by a **fingerprint** of everything the answer depends
on: every source file of ``sim/``, the files the decorator names (the chapter's module, the trace
files it reads), and numpy's version. A lookup opens only the file of the current fingerprint, so

* a call whose arguments are not in the table (any other position) is computed live, as before;
* after any change to the simulator, the chapter's module or its data, the old file no longer
  matches: every call is computed live (correct, only slow) until ``build`` writes a new one.

So a table never answers for other arguments or other code than its own; ``tests/test_memo.py``
checks both, and that ``build`` stores what the live function returns. The stored value is the
function's, pickled, minus what a ``strip`` function leaves out (a plan's run at its rate, say).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import pickle
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "data" / "panel_tables"
MISSING = object()

CHAPTERS = ("02", "03", "04", "05", "06", "07", "08", "09", "10")       # the chapters with tables (course.panel_grids)
SAVE_EVERY = 25                                        # build saves after this many new calls


def grid(chapter: str) -> list:
    """The chapter's (function, calls) pairs: ``course.panel_grids``."""
    from course import panel_grids
    return panel_grids.GRIDS[chapter]()


@functools.lru_cache(maxsize=None)
def _sim_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "sim").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def fingerprint(files=()) -> str:
    """16 hex digits over sim/'s sources, the given files (paths relative to the repository) and
    numpy's version: what a stored answer depends on besides its arguments."""
    import numpy
    h = hashlib.sha256(_sim_digest().encode())
    h.update(numpy.__version__.encode())
    for name in sorted(files):
        h.update(name.encode())
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()[:16]


def key(args: tuple, kwargs: dict) -> str | None:
    """The call's arguments as one string: their reprs (dataclass reprs name every field); None
    when a repr names an object by its address (``<... at 0x...>``): such a call is never stored
    or looked up, since another object could get the same text."""
    k = repr(args) + repr(sorted(kwargs.items()))
    return None if " at 0x" in k else k


class Table:
    """One function's stored answers: ``get(key)`` (``MISSING`` when absent or stale), ``put``,
    ``save``. Loaded on first use from the file of the current fingerprint."""

    def __init__(self, name: str, files=(), folder: Path | None = None):
        self.name, self.files = name, tuple(files)
        self.folder = FOLDER if folder is None else Path(folder)
        self._entries: dict | None = None
        self.hits = self.misses = 0

    @property
    def path(self) -> Path:
        return self.folder / f"{self.name}-{fingerprint(self.files)}.pkl.gz"

    def entries(self) -> dict:
        if self._entries is None:
            path = self.path
            self._entries = {}
            if path.exists():
                try:
                    with gzip.open(path, "rb") as f:
                        stored = pickle.load(f)
                except Exception as e:     # a damaged file: answer live, say so once
                    warnings.warn(f"{path.name}: unreadable ({e!r}); computing live. Rebuild it: "
                                  f"python -m course.memo build", stacklevel=2)
                    stored = {}
                if isinstance(stored, dict) and stored.get("name") == self.name:
                    self._entries = stored["entries"]
        return self._entries

    def current(self) -> bool:
        """Whether a table for the code as it is now exists."""
        return self.path.exists()

    def get(self, k: str):
        value = self.entries().get(k, MISSING)
        if value is MISSING:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, k: str, value) -> None:
        self.entries()[k] = value

    def save(self) -> Path:
        """Write the entries to the current fingerprint's file; remove this table's older files."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path
        for old in self.folder.glob(f"{self.name}-*.pkl.gz"):
            if old != path:
                old.unlink()
        tmp = path.with_suffix(".tmp")
        with gzip.open(tmp, "wb", compresslevel=9) as f:
            pickle.dump({"name": self.name, "entries": self.entries()}, f, protocol=4)
        os.replace(tmp, path)
        return path

    def forget(self) -> None:
        """Drop the loaded entries (the next lookup reads the file again)."""
        self._entries = None


def shipped(name: str, *files: str, strip=None, folder: Path | None = None):
    """Decorate a pure function: a call answers from the shipped table when it holds these exact
    arguments for the current code, else runs the function. ``strip(value)`` is what ``build``
    stores and what a call computed live returns too (default: the value): an answer is the same
    object whichever way it came, and a live answer holds no more memory than a stored one (the
    panels keep hundreds of them in their caches). The wrapper has ``table``, ``live`` (the
    undecorated function), ``store(*args, **kwargs)`` (compute live and keep the answer for
    ``save``) and ``peek(*args, **kwargs)`` (the stored answer, or ``MISSING``: never computes)."""
    def wrap(f):
        table = Table(name, files, folder)

        @functools.wraps(f)
        def lookup(*args, **kwargs):
            k = key(args, kwargs)
            value = MISSING if k is None else table.get(k)
            if value is MISSING:
                value = f(*args, **kwargs)
                return value if strip is None else strip(value)
            return value

        def peek(*args, **kwargs):
            k = key(args, kwargs)
            return MISSING if k is None else table.entries().get(k, MISSING)

        def store(*args, **kwargs):
            value = f(*args, **kwargs)
            k = key(args, kwargs)
            if k is not None:
                table.put(k, value if strip is None else strip(value))
            return value

        lookup.table, lookup.live, lookup.store, lookup.peek = table, f, store, peek
        return lookup
    return wrap


def build(chapter: str, log=print, limit: int | None = None) -> list[Path]:
    """Compute a chapter's tables over its panel's grid (``course.panel_grids``: pairs of a
    decorated function and the calls its controls reach, each an argument tuple or an ``(args,
    kwargs)`` pair) and save them, every ``SAVE_EVERY`` new calls too (a build cut short leaves a
    table of the calls it made). Entries of a table made by the same code are kept (only calls new
    to the grid run); a table of other code is recomputed whole. ``limit``: at most this many new
    calls per table (the grids list a learner's first moves first)."""
    paths = []
    for func, calls in grid(chapter):
        table = func.table
        path = table.path             # the code's fingerprint as the build starts, not as it ends
        table.forget()
        kept = table.entries()        # a table for this very code: its entries stay, only new calls run
        calls = list(dict.fromkeys(calls))
        table._entries = {k: kept[k] for k in (key(*_split(c)) for c in calls) if k in kept}
        start, new = time.perf_counter(), 0
        for i, call in enumerate(calls, 1):
            if limit is not None and new >= limit:
                break
            args, kwargs = _split(call)
            if key(args, kwargs) not in table._entries:
                func.store(*args, **kwargs)
                new += 1
                if len(table._entries) % SAVE_EVERY == 0 and table.path == path:
                    table.save()
            if i % 25 == 0 or i == len(calls):
                log(f"  {table.name}: {i}/{len(calls)} calls, {time.perf_counter() - start:.0f} s")
        if table.path != path:
            raise RuntimeError(f"{table.name}: the code changed while its table was built; build it again")
        paths.append(table.save())
    return paths


def _split(call) -> tuple[tuple, dict]:
    if isinstance(call, tuple) and len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict):
        return call
    return tuple(call), {}


def kwargs_call(**kwargs) -> tuple:
    """A grid entry for a call by keywords (hashable: ``build`` drops repeated calls)."""
    return ((), _Kwargs(kwargs))


class _Kwargs(dict):
    def __hash__(self):
        return hash(tuple(sorted(self.items())))


def status() -> list[tuple[str, str, bool]]:
    """(chapter, table name, current) for every table of every chapter."""
    out = []
    for chapter in CHAPTERS:
        for func, _ in grid(chapter):
            out.append((chapter, func.table.name, func.table.current()))
    return out


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("build", "status"):
        raise SystemExit("usage: python -m course.memo build [--limit N] [CHAPTER ...] | status")
    limit = None
    if argv[1:2] == ["--limit"]:
        limit, argv = int(argv[2]), argv[:1] + argv[3:]
    if argv[0] == "status":
        for chapter, name, ok in status():
            print(f"{chapter}  {name:<20} {'current' if ok else 'stale or missing: python -m course.memo build ' + chapter}")
        return
    for chapter in argv[1:] or list(CHAPTERS):
        if chapter not in CHAPTERS:
            raise SystemExit(f"chapter must be one of {CHAPTERS}, got {chapter!r}")
        for path in build(chapter, limit=limit):
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
