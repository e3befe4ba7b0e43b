"""The day-shaped load (sim.fleet.load.diurnal): its rate curve worked by hand, its arrivals against a
plain thinning, its hourly counts against the curve's integral, and a fleet that follows it."""

import math
import random

import numpy as np
import pytest

from sim.fleet import Autoscaler, Fleet, run_fleet
from sim.fleet.load import DAY_SHAPE, day_rate, diurnal

MEAN = sum(DAY_SHAPE) / 24          # the shape as printed; diurnal normalises it to mean 1


def test_the_shape_is_a_day_with_a_six_to_one_swing():
    assert len(DAY_SHAPE) == 24
    assert max(DAY_SHAPE) / min(DAY_SHAPE) == pytest.approx(6.0)
    assert DAY_SHAPE.index(min(DAY_SHAPE)) == 3 and DAY_SHAPE.index(max(DAY_SHAPE)) == 14
    assert MEAN == pytest.approx(23.21 / 24)


def test_rate_by_hand():
    # at a full hour: the shape's value over its mean; between hours: linear; 23:30 wraps to 00:00
    assert day_rate(14 * 3600, 10.0) == pytest.approx(10 * 1.50 / MEAN)
    assert day_rate(3 * 3600, 10.0) == pytest.approx(10 * 0.25 / MEAN)
    assert day_rate(0.5 * 3600, 10.0) == pytest.approx(10 * (0.42 + 0.32) / 2 / MEAN)
    assert day_rate(7.25 * 3600, 10.0) == pytest.approx(10 * (0.70 + 0.25 * (1.00 - 0.70)) / MEAN)
    assert day_rate(23.5 * 3600, 10.0) == pytest.approx(10 * (0.60 + 0.42) / 2 / MEAN)
    assert day_rate(24 * 3600 + 14 * 3600, 10.0) == pytest.approx(day_rate(14 * 3600, 10.0))   # next day
    # a day in 24 minutes: minute m is hour m; start_hour shifts the clock
    assert day_rate(14 * 60, 10.0, period_s=1440) == day_rate(14 * 3600, 10.0)
    assert day_rate(0, 10.0, start_hour=14) == day_rate(14 * 3600, 10.0)
    # a custom shape is normalised to mean 1: a flat day is the mean rate everywhere
    assert day_rate(5000, 3.0, shape=[7] * 24) == pytest.approx(3.0)


def plain_diurnal_arrivals(mean_rate, duration_s, period_s, seed):
    """Lewis-Shedler thinning written out: candidates at the peak rate, kept with probability
    rate(t) / peak, the two from random.Random(seed) and random.Random(seed + 1)."""
    values = [x / MEAN for x in DAY_SHAPE]
    peak = mean_rate * max(values)

    def rate(t):
        hour = (24 * t / period_s) % 24
        h = int(hour)
        return mean_rate * (values[h] + (values[(h + 1) % 24] - values[h]) * (hour - h))
    gaps, keep = random.Random(seed), random.Random(seed + 1)
    t, times = 0.0, []
    while True:
        t += gaps.expovariate(peak)
        if t >= duration_s:
            return times
        if keep.random() * peak < rate(t):
            times.append(t)


@pytest.mark.parametrize("seed", [0, 3])
def test_arrivals_equal_a_plain_thinning(seed):
    w = diurnal(5.0, 480, 100, 10, period_s=480, seed=seed)
    assert list(w.arrival) == plain_diurnal_arrivals(5.0, 480, 480, seed)
    assert w.kind == "diurnal" and len(w.input_len) == len(w.arrival)


def test_hourly_counts_follow_the_curve():
    # one day at 2 req/s: the count in each hour is Poisson with mean 3600 x the hour's mean rate
    # (the trapezoid of the linear curve); every hour within 5 standard deviations.
    w = diurnal(2.0, 86400, 100, 10, seed=1)
    counts = np.bincount((np.asarray(w.arrival) // 3600).astype(int), minlength=24)
    v = [x / MEAN for x in DAY_SHAPE]
    expected = np.array([2.0 * 3600 * (v[h] + v[(h + 1) % 24]) / 2 for h in range(24)])
    assert (np.abs(counts - expected) < 5 * np.sqrt(expected)).all()
    assert len(w) == pytest.approx(2.0 * 86400, rel=0.02)
    assert counts[14] > 4 * counts[3]


def test_seeded():
    a, b, c = (diurnal(3.0, 600, 100, 10, period_s=600, seed=s) for s in (4, 4, 5))
    assert a.arrival == b.arrival and a.input_len == b.input_len
    assert a.arrival != c.arrival


def test_a_fleet_follows_the_day(chapter_like):
    # a day in 10 minutes at 6 req/s on average; the outstanding-target autoscaler runs more
    # instances in the afternoon than at night
    load = diurnal(6.0, 600, 400, 60, period_s=600, seed=2)
    a = Autoscaler(policy="outstanding", target=2, interval_s=5, min_instances=1, max_instances=8)
    res = run_fleet(Fleet.of(chapter_like, 1, router="least_requests", autoscaler=a), load)
    assert not res.failed.any()
    up_at = lambda t: [up for time, up, _ in res.timeline if time <= t][-1]
    night = max(up_at(t) for t in np.arange(2.5 * 25, 4.5 * 25, 1.0))          # 02:30 - 04:30
    afternoon = max(up_at(t) for t in np.arange(13 * 25, 16 * 25, 1.0))        # 13:00 - 16:00
    assert afternoon > night


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="shape"):
        diurnal(1, 100, 10, 10, shape=[1] * 23)
    with pytest.raises(ValueError, match="shape"):
        diurnal(1, 100, 10, 10, shape=[1] * 23 + [-1])
    with pytest.raises(ValueError, match="shape"):
        diurnal(1, 100, 10, 10, shape=[0] * 24)
    with pytest.raises(ValueError, match="shape"):
        diurnal(1, 100, 10, 10, shape="flat")
    with pytest.raises(ValueError, match="start_hour"):
        diurnal(1, 100, 10, 10, start_hour=24)
    with pytest.raises(ValueError, match="period_s"):
        diurnal(1, 100, 10, 10, period_s=0)
    with pytest.raises(ValueError, match="mean_rate"):
        diurnal(-1, 100, 10, 10)
    with pytest.raises(ValueError, match="duration_s"):
        diurnal(1, math.inf, 10, 10)
