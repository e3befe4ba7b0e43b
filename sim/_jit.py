"""numba, when installed (the ``fast`` extra), behind one call: compile plain Python functions.

Nothing in sim/ imports numba at import time: ``compile_all`` is called on the engine's first run
that is worth compiling for (``sim.engine.COMPILE_MIN_REQUESTS``), because importing numba and
loading the machine code costs about half a second of start-up. numba's on-disk cache keeps the
machine code beside the source (``sim/__pycache__``), so only the first run on a machine compiles
(a few seconds). Without numba, or with ``SIM_NO_COMPILE=1`` in the environment, it returns None.
numba does not contract or reorder float operations unless asked (no ``fastmath``), so a compiled
function's results are the Python function's, bit for bit.
"""

from __future__ import annotations

import os
import types
import warnings


def disabled() -> bool:
    """Whether the environment turns compiling off (``SIM_NO_COMPILE=1``)."""
    return bool(os.environ.get("SIM_NO_COMPILE"))


def compile_all(specs):
    """Compile ``specs``, a list of ``(name, function, signature, calls)`` in dependency order
    (``calls``: names of earlier entries the function calls; ``signature`` a string, a callable
    taking the numba module and returning the signature, or None: typed where first called). Returns ``{name: compiled}``, or None
    when numba is missing, disabled or broken."""
    if disabled():
        return None
    try:
        import numba
    except ImportError:
        return None
    for cache in (True, False):                  # no writable cache folder: compile each time
        try:
            with warnings.catch_warnings():      # an unwritable cache folder warns; compile anyway
                warnings.simplefilter("ignore")
                done: dict = {}
                for name, fn, signature, calls in specs:
                    fn = _calling(fn, **{c: done[c] for c in calls}) if calls else fn
                    if signature is None:            # typed (and compiled) where first called
                        done[name] = numba.njit(cache=cache, nogil=True)(fn)
                    else:
                        sig = signature(numba) if callable(signature) else signature
                        done[name] = numba.njit(sig, cache=cache, nogil=True)(fn)
            return done
        except Exception:                        # pragma: no cover - a broken numba install
            continue
    return None                                  # pragma: no cover


def _calling(fn, **compiled):
    """``fn`` with some of the globals it calls replaced by their compiled versions (numba calls
    only compiled functions); the same code object, so numba's cache finds it by its source."""
    names = dict(fn.__globals__)
    names.update(compiled)
    twin = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__, twin.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    return twin
