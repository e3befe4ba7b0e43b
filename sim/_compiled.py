"""The engine's loops compiled with numba, when numba is installed (the ``fast`` extra).

``sim.engine._quiet_loop`` (a quiet run) and ``sim.engine._event_loop`` (the handbook's rule, event
steps and quiet runs, for an ``Instance`` with no KV policy, prefix cache or speculation) are
compiled as they are, for one signature each, eagerly: the first call costs nothing extra. numba's
on-disk cache keeps the machine code beside the engine (``sim/__pycache__``), so only the first
import on a machine compiles (a few seconds); later imports load it in milliseconds. numba does not
contract or reorder float operations unless asked (no ``fastmath``), so the compiled loops' times
are the Python loops', bit for bit (the engine's property tests run both). Without numba, or with
``SIM_NO_COMPILE=1`` in the environment, ``quiet_loop()`` and ``event_loop()`` return None and the
engine runs its pure-Python path.
"""

from __future__ import annotations

import os
import types
import warnings

_LOOP = _EVENT = None
_TRIED = False
SIGNATURE = ("Tuple((float64, int64, int64))(float64, int64, int64, int64, float64, float64, float64, "
             "float64, float64, float64, float64, float64, float64, float64)")
HEAP_PUSH_SIGNATURE = "int64(int64[::1], int64[::1], int64, int64, int64)"
HEAP_POP_SIGNATURE = "int64(int64[::1], int64[::1], int64)"


def quiet_loop():
    """The compiled ``_quiet_loop``, or None when numba is missing, disabled or fails."""
    _build()
    return _LOOP


def event_loop():
    """The compiled ``_event_loop``, or None when numba is missing, disabled or fails."""
    _build()
    return _EVENT


def _build() -> None:
    global _LOOP, _EVENT, _TRIED
    if _TRIED:
        return
    _TRIED = True
    if os.environ.get("SIM_NO_COMPILE"):
        return
    try:
        import numba
    except ImportError:
        return
    from sim import engine

    for cache in (True, False):                  # no writable cache folder: compile each time
        try:
            with warnings.catch_warnings():      # an unwritable cache folder warns; compile anyway
                warnings.simplefilter("ignore")
                jit = lambda sig, fn: numba.njit(sig, cache=cache, nogil=True)(fn)   # noqa: E731
                loop = jit(SIGNATURE, engine._quiet_loop)
                push = jit(HEAP_PUSH_SIGNATURE, engine._heap_push)
                pop = jit(HEAP_POP_SIGNATURE, engine._heap_pop)
                event = jit(_event_signature(numba), _calling(engine._event_loop, _quiet_loop=loop,
                                                      _heap_push=push, _heap_pop=pop))
            _LOOP, _EVENT = loop, event
            break
        except Exception:                        # pragma: no cover - a broken numba install
            _LOOP = _EVENT = None


def _event_signature(numba):
    """(f, s, arrival, req, first, fin, work, log_start, log_i): numpy arrays, and the Instance's own
    ``array('d')`` of first-token and finish times (numba reads and writes them in place)."""
    from array import array
    t = numba.types
    f64, i64, i64_2d, times = t.float64[::1], t.int64[::1], t.int64[:, ::1], numba.typeof(array("d"))
    return t.int64(f64, i64, f64, i64_2d, times, times, i64_2d, f64, i64_2d)


def _calling(fn, **compiled):
    """``fn`` with some of the globals it calls replaced by their compiled versions (numba calls
    only compiled functions); the same code object, so numba's cache finds it by its source."""
    names = dict(fn.__globals__)
    names.update(compiled)
    twin = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return twin
