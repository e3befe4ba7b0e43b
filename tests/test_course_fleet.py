"""course.fleet and course.practice_links: the helpers behind chapter 02's section 4 and the
chapters' closing practice lists (short loads here; the notebook runs the full ones)."""

import pytest

from course import fleet, practice_links
from practice import catalog


@pytest.fixture(scope="module")
def short_load():
    return fleet.chapter_load(duration_s=20.0)


def test_chapter_load_is_the_sizing_load():
    load = fleet.chapter_load()
    assert len(load.arrival) == 24000
    assert set(load.input_len) == {2000} and set(load.output_len) == {500}


def test_compare_at_rows():
    rows = fleet.compare_at(12, decode=(3, 12))   # 12 decode would leave no prefill: skipped
    assert [r.shape for r in rows] == ["12 colocated", "9 P + 3 D"]
    assert [r.kind for r in rows] == ["colocated", "PD"]
    assert all(r.gpus == 96 for r in rows)
    assert len(rows[0].utilisation) == 1 and len(rows[1].utilisation) == 2
    assert rows[0].passes                                           # the chapter's 12 instances hold 200 QPS
    assert rows[1].tpot_p99 < rows[0].tpot_p99                      # PD: no prefill chunk in a decode step
    text = fleet.format_fleet_rows(rows)
    assert "12 colocated" in text and "9 P + 3 D" in text and len(text.splitlines()) == 3


def test_too_few_decode_instances_fall_behind(short_load):
    (_, one) = fleet.compare_at(12, decode=(1,), load=short_load)
    assert not one.passes and one.tpot_p99 > fleet.TPOT_SLO


def test_session_load_has_the_chapters_shape():
    load = fleet.session_load()
    assert len(load.arrival) == fleet.SESSIONS * fleet.TURNS
    assert sum(load.input_len) / len(load.input_len) == pytest.approx(2000)
    assert set(load.output_len) == {500}


def test_prefix_aware_routing_finds_more_cached_tokens():
    few = fleet.session_load(sessions=600)
    rows = fleet.compare_routers(4, load=few)
    assert [r.router for r in rows] == ["least_requests", "prefix_aware"]
    assert rows[1].prefix_hit_rate > rows[0].prefix_hit_rate
    assert "prefix_aware" in fleet.format_route_rows(rows)


@pytest.mark.parametrize("chapter,must", [("01", {126, 147}), ("02", {149, 184})])
def test_practice_lists_follow_the_catalog(chapter, must):
    ids = [p.id for p in practice_links.chapter_problems(chapter)]
    assert must <= set(ids) and ids == sorted(ids)
    assert set(ids) == {p.id for p in catalog.all_problems() if p.chapter == chapter}
    text = practice_links.practice_list(chapter)
    for p in practice_links.chapter_problems(chapter):
        assert f"{p.id:4}" in text and p.title in text
    assert "practice/judge.py start" in text


def test_practice_list_for_a_chapter_without_problems():
    assert "no practice problems" in practice_links.practice_list("99")
