"""Time-varying load: Poisson arrivals whose rate changes over time.

    piecewise([(0, 50), (600, 200), (1200, 80)], 1800, 2000, 500)   # rate 50 req/s from t=0, ...
    daily(100, 86400, 2000, 500, peak_to_trough=4)                  # one day, sinusoidal

Both draw by thinning (Lewis and Shedler): candidate gaps at the peak rate from
``random.Random(seed).expovariate``, each kept with probability rate(t) / peak rate, from a second
stream ``random.Random(seed + 1)``. Lengths are drawn as in ``sim.workload``.
"""

from __future__ import annotations

import bisect
import math
import random

from sim.validate import check_int, check_number
from sim.workload import Workload, _lengths


def piecewise(rates, duration_s: float, input_len, output_len, seed: int = 0) -> Workload:
    """Piecewise-constant rate: ``rates`` is [(start_s, req/s), ...], starts increasing from 0."""
    rates = [tuple(r) for r in rates]
    if not rates or rates[0][0] != 0:
        raise ValueError(f"rates must be [(start_s, rate), ...] starting at start_s = 0, got {rates!r}")
    for k, (start, rate) in enumerate(rates):
        check_number("rates rate", rate, 0, strict=False, note="(requests per second)")
        if k and not start > rates[k - 1][0]:
            raise ValueError(f"rates start_s must increase, got {rates!r}")
    starts = [s for s, _ in rates]
    values = [r for _, r in rates]
    return _thinned(lambda t: values[bisect.bisect_right(starts, t) - 1], max(values), duration_s,
                    input_len, output_len, seed, "piecewise")


def daily(mean_rate: float, duration_s: float, input_len, output_len, *, peak_to_trough: float = 3.0,
          period_s: float = 86400.0, peak_at_s: float = 14 * 3600, seed: int = 0) -> Workload:
    """A daily curve: rate(t) = mean x (1 + a cos(2 pi (t - peak_at_s) / period_s)), with a chosen so
    that the peak is ``peak_to_trough`` times the trough (a = (r - 1) / (r + 1))."""
    check_number("mean_rate", mean_rate, 0, note="(requests per second)")
    check_number("peak_to_trough", peak_to_trough, 1, strict=False)
    check_number("period_s", period_s, 0, note="(seconds)")
    a = (peak_to_trough - 1) / (peak_to_trough + 1)
    return _thinned(lambda t: mean_rate * (1 + a * math.cos(2 * math.pi * (t - peak_at_s) / period_s)),
                    mean_rate * (1 + a), duration_s, input_len, output_len, seed, "daily")


def _thinned(rate_at, peak, duration_s, input_len, output_len, seed, kind) -> Workload:
    check_number("duration_s", duration_s, 0, note="(seconds)")
    check_int("seed", seed, None)
    if peak <= 0:
        raise ValueError("rates must not all be 0")
    gaps, keep = random.Random(seed), random.Random(seed + 1)
    t, times = 0.0, []
    while True:
        t += gaps.expovariate(peak)
        if t >= duration_s:
            break
        if keep.random() * peak < rate_at(t):
            times.append(t)
    if not times:
        raise ValueError("the load has no request within duration_s")
    inp, out = _lengths(len(times), input_len, output_len, seed)
    return Workload(kind, tuple(times), inp, out)
