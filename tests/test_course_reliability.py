"""course.reliability: spare instances for an availability target, checked against hand-worked binomials."""

import math

import pytest

from course import reliability as rel


def test_capacity_availability_by_hand():
    # 2 needed of 3, each up 90%: all three up 0.729, exactly two 3 x 0.81 x 0.1 = 0.243
    assert rel.capacity_availability(3, 2, 0.9) == pytest.approx(0.972)
    # 2 of 4: 1 - P(none up) - P(one up) = 1 - 0.0001 - 4 x 0.9 x 0.001
    assert rel.capacity_availability(4, 2, 0.9) == pytest.approx(0.9963)
    assert rel.capacity_availability(2, 2, 0.9) == pytest.approx(0.81)
    assert rel.capacity_availability(1, 2, 0.9) == 0.0
    assert rel.capacity_availability(5, 5, 1.0) == 1.0


def test_spares_are_the_fewest_that_reach_the_target():
    assert rel.spares_for(2, 0.9, 0.99) == 2            # 3 instances give 0.972, 4 give 0.9963
    assert rel.spares_for(2, 0.9, 0.97) == 1
    assert rel.spares_for(2, 0.9, 0.8) == 0
    assert rel.spares_for(12, 1.0) == 0


@pytest.mark.parametrize("needed, a", [(12, 0.99), (13, 0.995), (16, 0.999), (100, 0.98)])
def test_one_spare_fewer_misses_the_target(needed, a):
    s = rel.spares_for(needed, a, 0.999)
    assert rel.capacity_availability(needed + s, needed, a) >= 0.999
    if s:
        assert rel.capacity_availability(needed + s - 1, needed, a) < 0.999


def test_more_spares_never_lower_the_odds():
    odds = [rel.capacity_availability(12 + s, 12, 0.99) for s in range(6)]
    assert odds == sorted(odds) and odds[0] == pytest.approx(0.99 ** 12)


def test_the_chapters_table():
    # 12 needed, each up 99%: 13 deployed carry the peak with 0.99^13 + 13 x 0.99^12 x 0.01 = 0.9927,
    # 14 with that plus C(14, 2) x 0.99^12 x 0.01^2 = 0.99966: two spares.
    assert rel.capacity_availability(13, 12, 0.99) == pytest.approx(0.99 ** 13 + 13 * 0.99 ** 12 * 0.01)
    assert rel.capacity_availability(14, 12, 0.99) == pytest.approx(
        0.99 ** 14 + 14 * 0.99 ** 13 * 0.01 + 91 * 0.99 ** 12 * 0.01 ** 2)
    rows = rel.spare_table(12, (0.99, 0.995, 0.999))
    assert [r.spares for r in rows] == [2, 2, 1]
    assert rows[0].without_spares == pytest.approx(0.99 ** 12)
    text = rel.format_spare_rows(12, rows)
    assert "12 instances needed" in text and "99.9%" in text


@pytest.mark.parametrize("call, field", [
    (lambda: rel.spares_for(0, 0.99), "needed"),
    (lambda: rel.spares_for(12, 1.5), "availability"),
    (lambda: rel.spares_for(12, 0.0), "availability"),
    (lambda: rel.spares_for(12, math.nan), "availability"),
    (lambda: rel.spares_for(12, 0.99, 1.0), "target"),
    (lambda: rel.spares_for(12, True), "availability"),
    (lambda: rel.capacity_availability(-1, 2, 0.9), "deployed"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


def test_hopeless_availability_is_an_error_not_a_hang():
    with pytest.raises(ValueError, match="spares"):
        rel.spares_for(50, 0.001, 0.999)


def test_minutes_short_per_month():
    # 99.9% of a 30-day month leaves 43.2 minutes; one instance needed, one deployed, up 99.9%
    assert rel.minutes_short_per_month(1, 1, 0.999) == pytest.approx(43.2)
    assert rel.minutes_short_per_month(3, 2, 0.9) == pytest.approx(0.028 * 43200)
