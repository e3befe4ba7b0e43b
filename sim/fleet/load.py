"""Time-varying load: Poisson arrivals whose rate changes over time.

    piecewise([(0, 50), (600, 200), (1200, 80)], 1800, 2000, 500)   # rate 50 req/s from t=0, ...
    daily(100, 86400, 2000, 500, peak_to_trough=4)                  # one day, sinusoidal
    diurnal(100, 86400, 2000, 500)                                  # one day, a chat service's shape
    diurnal(100, 1440, 2000, 500, period_s=1440)                    # the same day in 24 minutes

All draw by thinning (Lewis and Shedler): candidate gaps at the peak rate from
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


# A stylised weekday of an interactive chat service, the request rate at each hour 00:00 .. 23:00
# relative to the day's mean (local time of most users): the night trough at 03:00-04:00 is a sixth
# of the peak; the morning ramp starts at 06:00 and reaches the mean by 08:00; a working-day plateau
# from 10:00 to 17:00 peaks at 14:00-15:00; a dip at 18:00-19:00 is followed by an evening shoulder at
# 20:00; the rate falls to below half the mean by midnight. Between hours the rate is linear. The
# shape is an illustration of the usual diurnal form of user-facing traffic (a working-day plateau,
# a night trough several times lower), not a measurement: pass ``shape`` for your own service.
DAY_SHAPE = (0.42, 0.32, 0.27, 0.25, 0.25, 0.30, 0.45, 0.70, 1.00, 1.25, 1.40, 1.45,
             1.40, 1.45, 1.50, 1.50, 1.45, 1.35, 1.25, 1.25, 1.30, 1.20, 0.90, 0.60)


def day_rate(t: float, mean_rate: float, *, shape=DAY_SHAPE, period_s: float = 86400.0,
             start_hour: float = 0.0) -> float:
    """The request rate at time ``t`` (seconds) of ``diurnal``: ``mean_rate`` x the shape at that
    hour of the day (``shape`` normalised to mean 1, linear between hours, wrapping at midnight),
    the day lasting ``period_s`` and the run starting at ``start_hour``."""
    return _rate(t, mean_rate, _day_shape(shape), period_s, start_hour)


def _rate(t, mean_rate, values, period_s, start_hour) -> float:
    hour = (start_hour + 24 * t / period_s) % 24
    h0 = int(hour)
    h1 = (h0 + 1) % 24
    return mean_rate * (values[h0] + (values[h1] - values[h0]) * (hour - h0))


def diurnal(mean_rate: float, duration_s: float, input_len, output_len, *, shape=DAY_SHAPE,
            period_s: float = 86400.0, start_hour: float = 0.0, seed: int = 0) -> Workload:
    """A day-shaped load: Poisson arrivals at ``day_rate(t)`` (``DAY_SHAPE`` by default: trough at
    03:00-04:00, peak at 14:00-15:00, six to one), for ``duration_s`` seconds. ``period_s`` is how
    long the simulated day lasts (86400: real time; 1440: a day in 24 minutes, the same shape at the
    same mean rate); ``start_hour`` (0 <= h < 24) is the hour of day at t = 0."""
    check_number("mean_rate", mean_rate, 0, note="(requests per second)")
    check_number("period_s", period_s, 0, note="(seconds)")
    check_number("start_hour", start_hour, 0, strict=False, note="(hour of day, 0 <= h < 24)")
    if not start_hour < 24:
        raise ValueError(f"start_hour must be 0 <= h < 24 (hour of day), got {start_hour!r}")
    values = _day_shape(shape)
    return _thinned(lambda t: _rate(t, mean_rate, values, period_s, start_hour), mean_rate * max(values), duration_s, input_len, output_len, seed, "diurnal")


def _day_shape(shape) -> tuple:
    """``shape`` checked (24 numbers >= 0, not all 0) and normalised to mean 1."""
    try:
        values = [float(x) for x in shape]
    except (TypeError, ValueError):
        raise ValueError(f"shape must be 24 numbers (relative rate per hour), got {shape!r}") from None
    if len(values) != 24 or not all(math.isfinite(x) and x >= 0 for x in values) or not any(values):
        raise ValueError(f"shape must be 24 finite numbers >= 0, not all 0 (relative rate per hour), got {shape!r}")
    mean = sum(values) / 24
    return tuple(x / mean for x in values)


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
