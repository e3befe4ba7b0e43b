"""Progress on stderr for work that takes more than a second (``python -m sim fleet / sweep /
calibrate``): a tqdm bar when tqdm is installed, else a plain counter; sim/ itself needs only numpy.

    with progress_bar("options", enabled=None) as tick:     # None: only when stderr is a terminal
        rows = map_jobs(fn, jobs, progress=tick)             # tick(done, total) after each job

``tick(done, total)`` sets the count (``total`` None: unknown, a counter without a bar). Nothing is
written before ``delay_s`` has passed, so a quick command prints no bar at all.

When to show it: ``enabled=None`` (the CLI's ``--progress auto``) shows it only when the stream is
a terminal. A bar redraws itself with carriage returns; written into a pipe, a log file, a CI job or
a test's captured stderr it would leave hundreds of half-lines behind the output that matters, and
there nobody is watching it move. ``enabled=True`` (``--progress always``) forces it, e.g. for
``2> log`` followed with ``tail -f``; ``False`` (``--progress never``) silences it.
"""

from __future__ import annotations

import sys
import time

MODES = {"auto": None, "always": True, "never": False}     # the CLI's --progress choices
REDRAW_S = 0.1                                             # the plain counter redraws at most this often


def progress_flag(parser) -> None:
    """``--progress auto | always | never`` on an argparse parser, for any command that runs longer
    than a second; pass ``enabled=MODES[args.progress]`` to ``progress_bar``."""
    parser.add_argument("--progress", default="auto", choices=list(MODES),
                        help="progress on stderr: auto (when stderr is a terminal, the default), always, never")


def progress_bar(what: str, *, enabled: bool | None = None, stream=None, delay_s: float = 1.0,
                 total: int | None = None) -> Progress:
    """A ``Progress`` counting ``what`` ("options", "fleets simulated") on ``stream`` (stderr)."""
    stream = sys.stderr if stream is None else stream
    if enabled is None:
        isatty = getattr(stream, "isatty", None)
        enabled = bool(isatty and isatty())
    return Progress(what, stream, delay_s, total) if enabled else Progress(what, None, delay_s, total)


class Progress:
    """``progress(done, total=None)``: the callback ``map_jobs`` and ``size_fleet`` call; a context
    manager that closes the line. Drawn by tqdm when it can be imported, else by ``_Counter``;
    with no stream it only counts (``done``, ``total``)."""

    def __init__(self, what: str, stream, delay_s: float, total: int | None):
        self.what, self.stream, self.done, self.total = what, stream, 0, total
        self._bar = None if stream is None else _bar(what, stream, delay_s, total)

    def __call__(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self._bar is not None:
            self._bar.set(done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _bar(what, stream, delay_s, total):
    try:
        import tqdm                               # optional: in the course and test extras
    except ImportError:
        return _Counter(what, stream, delay_s)
    return _Tqdm(tqdm.tqdm(total=total, desc=what, file=stream, delay=delay_s, leave=False,
                           dynamic_ncols=True), delay_s)


class _Tqdm:
    def __init__(self, bar, delay_s):
        self.bar, self.shown_from = bar, time.monotonic() + delay_s

    def set(self, done, total):
        resized = total is not None and self.bar.total != total
        if resized:
            self.bar.total = total
        self.bar.update(done - self.bar.n)
        if (resized or done == total) and time.monotonic() >= self.shown_from:
            self.bar.refresh()              # tqdm redraws on its own clock; show these at once

    def close(self):
        self.bar.close()


class _Counter:
    """The fallback: "\\r<what>: 12/40" (or "12" with no total), redrawn at most every REDRAW_S."""

    def __init__(self, what, stream, delay_s):
        self.what, self.stream, self.start, self.delay_s = what, stream, time.monotonic(), delay_s
        self.drawn_at = None

    def set(self, done, total):
        now = time.monotonic()
        if now - self.start < self.delay_s:
            return
        if self.drawn_at is not None and now - self.drawn_at < REDRAW_S and done != total:
            return
        self.drawn_at = now
        count = f"{done}/{total}" if total is not None else f"{done}"
        self.stream.write(f"\r{self.what}: {count}")
        self.stream.flush()

    def close(self):
        if self.drawn_at is not None:
            self.stream.write("\n")
            self.stream.flush()
