"""The engine's quiet-run loop compiled with numba, when numba is installed (the ``fast`` extra).

``sim.engine._quiet_loop`` is compiled as it is, for one signature, eagerly: the first call costs
nothing extra. numba's on-disk cache keeps the machine code beside this file (``__pycache__``), so
only the first import on a machine compiles (about a second); later imports load it in
milliseconds. numba does not contract or reorder float operations unless asked (no ``fastmath``),
so the compiled loop's times are the plain loop's, bit for bit (the engine's property tests run
both). Without numba, or with ``SIM_NO_COMPILE=1`` in the environment, ``quiet_loop()`` returns
None and the engine runs its pure-Python path.
"""

from __future__ import annotations

import os
import warnings

_LOOP = None
_TRIED = False
SIGNATURE = ("Tuple((float64, int64, int64))(float64, int64, int64, int64, float64, float64, float64, "
             "float64, float64, float64, float64, float64, float64, float64)")


def quiet_loop():
    """The compiled ``_quiet_loop``, or None when numba is missing, disabled or fails."""
    global _LOOP, _TRIED
    if _TRIED:
        return _LOOP
    _TRIED = True
    if os.environ.get("SIM_NO_COMPILE"):
        return None
    try:
        import numba
    except ImportError:
        return None
    from sim.engine import _quiet_loop

    for cache in (True, False):                  # no writable cache folder: compile each time (~1 s)
        try:
            with warnings.catch_warnings():      # an unwritable cache folder warns; compile anyway
                warnings.simplefilter("ignore")
                _LOOP = numba.njit(SIGNATURE, cache=cache, nogil=True)(_quiet_loop)
            break
        except Exception:                        # pragma: no cover - a broken numba install
            _LOOP = None
    return _LOOP
