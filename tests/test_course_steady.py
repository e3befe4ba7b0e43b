"""course.steady: the chapter-01 comparison of a 1500-request trial with a steady-state trial."""

import numpy as np
import pytest

from course import panel, steady
from sim import capacity, max_rate


@pytest.fixture(scope="module")
def at_handbook_rate():
    rate = max_rate(panel.chapter_setup(), (2000, 500), 2.0, 0.05, method="bisect")
    return steady.steady_check(panel.chapter_setup(), rate, 2000, 500, 2.0, 0.05)


def test_the_handbooks_rate_passes_short_and_fails_steady(at_handbook_rate):
    c = at_handbook_rate
    n, window = capacity.steady_trial(panel.chapter_setup(), 2000, 500, 2.0, 0.05, c.rate)
    assert (c.requests, c.window_s) == (n, window)
    assert c.short_ok >= 0.99 > c.judged_ok          # the short trial passes, the steady one does not
    assert 2 < c.short_windows < 4                   # 1500 requests span about three windows
    assert len(c.window_ok) >= 95 and c.failing_windows > 10
    text = steady.format_steady_check(c)
    assert "-> pass" in text and "-> fail" in text and f"{c.requests:,}" in text


def test_judged_part_is_what_the_search_judges(at_handbook_rate):
    # sim.capacity's verdict at that rate is the judged part's
    setup = panel.chapter_setup()
    assert capacity.meets_slo(setup, (2000, 500), at_handbook_rate.rate, 2.0, 0.05) is (at_handbook_rate.judged_ok >= 0.99)


def test_window_fractions_are_fractions(at_handbook_rate):
    w = at_handbook_rate.window_ok
    assert np.all((w >= 0) & (w <= 1)) and w.min() < 0.99 <= w.max()
