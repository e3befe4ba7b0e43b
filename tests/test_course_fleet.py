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


def test_the_pd_wait_explains_tpot_against_itl(short_load):
    (_, one) = fleet.compare_at(12, decode=(1,), load=short_load)
    # the single decode instance is the queue: requests wait seconds for a slot after the first token
    assert one.first_gap_p99 > 1.0 and one.first_gap_p50 > 0.1
    # once decoding, a step of <= 512 decoders: TPOT is the p99 ITL, far under the p99 TPOT
    assert one.decode_tpot_p99 < fleet.TPOT_SLO < one.tpot_p99
    assert one.decode_tpot_p99 == pytest.approx(one.itl_p99, rel=0.05)
    assert one.end_s > 20.0                      # the backlog drains after the arrivals stop
    text = fleet.format_pd_waits([one])
    assert "11 P + 1 D" in text and "first gap" in text


def test_the_command_line_sizes_the_chapters_service_alike(capsys):
    """CLI_ARGS give `python -m sim fleet` the chapter's factors: same counts, GPUs and costs (a
    shorter load on both sides to keep the test short; the preset's 70.55e9 parameters against
    the chapter's 70.6e9 move only the latencies)."""
    import re
    from sim import cli

    args = list(fleet.CLI_ARGS)
    args[args.index("--duration") + 1] = "30"
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    ours = str(fleet.size_chapter_fleet(duration_s=30.0))
    pick = lambda text: (re.search(r"one instance within the SLOs: ([\d.]+)", text).group(1),
                         re.findall(r"(\d+ instances, \d+ GPUs, \$\d+/h)", text),
                         re.search(r"cheapest\s+(\w+)", text).group(1))
    assert pick(out) == pick(ours)
    assert fleet.cli_command().startswith("python -m sim fleet --model llama-3-70b --gpu h100-sxm --tp 8")
