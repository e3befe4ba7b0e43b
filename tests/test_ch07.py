"""Chapter 07 (PD disaggregation): the trace statistics, layouts, capacity and verdicts of
course/ch07.py against plain computations and sim, the panel without a kernel, and the executed
notebook (in order, no errors, widget state saved, every figure the prose quotes printed by a cell).
Re-execute with `PYTHONPATH=$PWD python notebooks/run_notebooks.py 07`."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import numpy as np
import pytest

from course import ch07
from sim import trace
from sim.fleet import run_fleet
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel
from chapter_notebook import code_cells as _code, checked_cells, figures, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "07-pd-disaggregation.ipynb"


def test_trace_stats_by_hand():
    t = trace.azure(ch07.TRACES["code"])
    s = ch07.stats("code")
    assert s.requests == len(t) == 8819 and s.input_median == 1469 and s.output_median == 13
    assert s.prefill_tokens_per_s == pytest.approx(sum(t.input_len) / t.duration_s)
    assert s.prefill_to_decode == pytest.approx(sum(t.input_len) / sum(t.output_len))
    mean, peak = ch07.burstiness("code")
    assert mean == pytest.approx(s.prefill_tokens_per_s) and peak > 10 * mean
    assert ch07.burstiness("conv")[1] < 3 * ch07.burstiness("conv")[0]


def test_load_replays_the_window_at_the_rate():
    w = ch07.load("conv", 30)
    assert len(w) / w.arrival[-1] == pytest.approx(30, rel=0.02)
    window = trace.azure(ch07.TRACES["conv"]).window(600, 600)
    assert w.input_len == window.input_len           # the same requests, compressed in time


def test_layouts_and_fleets():
    assert ch07.layouts() == ("colocated", "colocated-2k", "1P3D", "2P2D", "3P1D")
    f = ch07.fleet("3P1D", "ethernet")
    assert f.link.gbs == 12.5 and f.link.latency_s == 2e-3
    small = ch07.fleet("colocated-2k")
    assert small.colocated.setup.max_num_batched_tokens == 2048 and small.colocated.instances == 4


def test_run_and_attainment_are_the_fleets():
    r = ch07.run("conv", "2P2D", 20)
    direct = run_fleet(ch07.fleet("2P2D"), ch07.load("conv", 20))
    assert np.array_equal(r.ttft, direct.ttft, equal_nan=True)
    ok = (direct.ttft <= 1.0) & (np.isnan(direct.tpot) | (direct.tpot <= 0.03))
    assert ch07.attainment(r, 1.0, 0.03) == ok.mean()


def test_capacity_is_the_last_passing_rate_before_the_first_failure():
    name, lay, a, b = "conv", "3P1D", 1.0, 0.03
    cap = ch07.capacity(name, lay, a, b)
    passing = [ch07.attainment(ch07.run(name, lay, r), a, b) >= ch07.TARGET for r in ch07.RATES[name]]
    k = passing.index(False) if False in passing else len(passing)
    assert cap == (ch07.RATES[name][k - 1] if k else 0.0)
    assert ch07.capacity(name, lay, a, b, target=0.5) >= cap


def test_verdict_compares_the_best_of_each_side():
    v = ch07.verdict("conv", 1.0, 0.02)
    assert v.colocated == max(ch07.capacity("conv", lay, 1.0, 0.02) for lay in ("colocated", "colocated-2k"))
    assert v.pd == max(ch07.capacity("conv", lay, 1.0, 0.02) for lay in ("1P3D", "2P2D", "3P1D"))
    assert v.winner == "PD"


def test_the_two_pd_splits_are_bound_by_different_slos():
    # the prose: 2P2D is TTFT-bound (its capacity does not move with TPOT: 30 req/s at TTFT 0.5 s,
    # 40 at 1-2 s), 3P1D is TPOT-bound (50, 40, 20 req/s as TPOT tightens from 50 to 20 ms, at every
    # TTFT), so 2P2D is the best split at TPOT 20 ms and 3P1D at 50 ms
    for ttft, held in zip(ch07.SLO_TTFT, (30, 40, 40)):
        assert [ch07.capacity("conv", "2P2D", ttft, tpot) for tpot in ch07.SLO_TPOT] == [held] * 3
        assert ch07.capacity("conv", "2P2D", ttft, None) == held          # TTFT alone sets it
        assert [ch07.capacity("conv", "3P1D", ttft, tpot) for tpot in (0.05, 0.03, 0.02)] == [50, 40, 20]
        assert ch07.verdict("conv", ttft, 0.02).best_pd == "2P2D"
        assert ch07.verdict("conv", ttft, 0.05).best_pd == "3P1D"


def test_on_the_conversation_trace_pd_wins_at_tight_tpot_and_ties_at_50ms():
    # the prose: PD wins every TTFT at TPOT 20 and 30 ms, the colocated fleet ties 3P1D (50 against
    # 50) at TPOT 50 ms and wins no cell; at TTFT 1-2 s PD serves 40/30 = 1.33x (30 ms) to 40/20 = 2x
    # (20 ms) the colocated fleet
    for ttft in ch07.SLO_TTFT:
        assert [ch07.verdict("conv", ttft, tpot).winner for tpot in ch07.SLO_TPOT] == ["PD", "PD", "tie"]
        v = ch07.verdict("conv", ttft, 0.05)
        assert (v.colocated, v.best_pd, v.pd) == (50, "3P1D", 50)
    for ttft in (1.0, 2.0):
        ratios = [ch07.verdict("conv", ttft, tpot).pd / ch07.verdict("conv", ttft, tpot).colocated
                  for tpot in (0.03, 0.02)]
        assert [f"{x:.2f}" for x in ratios] == ["1.33", "2.00"]
    # the small chunk changes neither of the two common SLO pairs (30 and 50 req/s)
    assert [ch07.capacity("conv", lay, 1.0, 0.03) for lay in ("colocated", "colocated-2k")] == [30, 30]
    assert [ch07.capacity("conv", lay, 2.0, 0.05) for lay in ("colocated", "colocated-2k")] == [50, 50]


def test_the_3p1d_decode_instance_at_50_req_s():
    # the prose: at 50 req/s the one decode instance of 3P1D holds three to four hundred sequences,
    # its median TPOT is 31.6 ms and the all-reduces of such a step take about ten ms; it fails
    # TPOT, never TTFT (seven in ten requests over 30 ms, 95% over 20 ms), so the link table's shares
    # are low, and the link moves them by about one point (about 5% at 20 ms on every link)
    r = ch07.run("conv", "3P1D", 50)
    assert f"{np.nanmedian(r.tpot) * 1e3:.1f}" == "31.6"
    in_decode = 50 * np.mean(r.e2e - r.ttft)                    # Little's law on the one decode instance
    assert 300 < in_decode < 400
    assert 0.009 < ch07.setup().comm_seconds(in_decode) < 0.011
    over_ttft, over_tpot = ch07.misses(r, 1.0, 0.03)
    assert over_ttft == 0 and 0.65 < over_tpot < 0.75
    assert 0.93 < ch07.misses(r, 1.0, 0.02)[1] < 0.97
    met30 = [ch07.attainment(ch07.run("conv", "3P1D", 50, link), 1.0, 0.03) for link in ch07.LINKS]
    met20 = [ch07.attainment(ch07.run("conv", "3P1D", 50, link), 1.0, 0.02) for link in ch07.LINKS]
    assert max(met30) - min(met30) < 0.015 and all(0.04 < x < 0.06 for x in met20)


def test_every_pd_win_on_the_code_trace_is_the_tpot_slo():
    # the prose: wherever PD wins the code grid, the colocated fleet meets the same TTFT without TPOT
    # judged (TTFT 0.5 s: 2 against 2; 1 s: 2 against 2; 2 s: 4 against 2); PD wins at TPOT 20-30 ms
    # and at TTFT 0.5 s, and 3P1D is among the best splits in every cell
    wins = [(t, p) for t in ch07.SLO_TTFT for p in ch07.SLO_TPOT if ch07.verdict("code", t, p).winner == "PD"]
    assert wins and any(t == 0.5 for t, _ in wins)
    assert set(wins) == {(t, p) for t in ch07.SLO_TTFT for p in (0.02, 0.03)} | {(0.5, 0.05)}
    for t, p in wins:
        assert ch07.capacity("code", "colocated", t, None) >= ch07.verdict("code", t, p).pd
    assert [ch07.capacity("code", "colocated", t, None) for t in ch07.SLO_TTFT] == [2, 2, 4]
    assert [max(ch07.capacity("code", lay, t, None) for lay in ch07.layouts()[2:]) for t in ch07.SLO_TTFT] == [2, 2, 2]
    for t in ch07.SLO_TTFT:
        for p in ch07.SLO_TPOT:
            assert ch07.capacity("code", "3P1D", t, p) == ch07.verdict("code", t, p).pd
    # judged on TTFT alone, no layout of the 32 GPUs holds 6 req/s (the exercise's question)
    assert max(ch07.capacity("code", lay, 2.0, None) for lay in ch07.layouts()) == 4


def test_the_small_chunk_does_not_help_the_code_trace():
    # the prose: judged on TTFT alone (4 req/s) or with end to end 5 s (2 req/s) both budgets hold
    # the same; the one step the 2048-token budget gains at TTFT 2 s / TPOT 50 ms (2 against 0) is
    # its TPOT misses at 2 req/s falling just under the 1% budget and the 8192-token one's just over
    lays = ("colocated", "colocated-2k")
    assert [ch07.capacity("code", lay, 2.0, None) for lay in lays] == [4, 4]
    assert [ch07.capacity("code", lay, 2.0, None, e2e_slo=5.0) for lay in lays] == [2, 2]
    assert [ch07.capacity("code", lay, 2.0, 0.05) for lay in lays] == [0, 2]
    big, small = (ch07.misses(ch07.run("code", lay, 2), 2.0, 0.05)[1] for lay in lays)
    assert small <= 1 - ch07.TARGET < big < 0.015


def test_a_2048_token_mixed_step_is_itself_over_the_50ms_tpot():
    # the prose: a step carrying one 2048-token chunk still takes about eighty ms (over the 50 ms
    # TPOT), an 8192-token one about 0.27 s; the TPOT misses of the short answers are about the
    # same under both budgets, the small chunk's slightly more (13.0% and 13.7% at 4 req/s)
    s = ch07.setup()
    for decoders in (0, 50):
        ctx = 1500 * decoders
        assert 0.075 < s.step_time(2048 + decoders, 2048 + ctx, decoders=decoders) < 0.09
        assert 0.25 < s.step_time(8192 + decoders, 8192 + ctx, decoders=decoders) < 0.29
    big, small = (ch07.misses(ch07.run("code", lay, 4), 2.0, 0.05)[1] for lay in ("colocated", "colocated-2k"))
    assert abs(big - small) < 0.02 and small > big > 0.1


def test_attainment_judges_only_the_slos_given():
    r = ch07.Run(ttft=np.array([0.5, 0.5, 3.0]), tpot=np.array([0.01, 0.2, np.nan]), e2e=np.array([1.0, 9.0, 3.0]),
                 itl_p99_s=0.0, transfer_p99_s=None)
    assert ch07.attainment(r, 1.0, 0.05) == pytest.approx(1 / 3)          # the slow TPOT and the slow TTFT fail
    assert ch07.attainment(r, 1.0, None) == pytest.approx(2 / 3)          # TPOT unjudged
    assert ch07.attainment(r, 1.0, None, e2e_slo=5.0) == pytest.approx(1 / 3)
    assert ch07.attainment(r, 5.0, None, e2e_slo=5.0) == pytest.approx(2 / 3)
    assert ch07.misses(r, 1.0, 0.05) == (pytest.approx(1 / 3), pytest.approx(1 / 3))


def test_run_keeps_each_requests_end_to_end_latency():
    r = ch07.run("code", "3P1D", 2)
    direct = run_fleet(ch07.fleet("3P1D"), ch07.load("code", 2))
    assert np.array_equal(r.e2e, direct.e2e) and np.all(r.e2e >= r.ttft)
    # with TPOT unjudged the colocated fleet serves the code trace at a rate where TPOT fails it
    assert ch07.capacity("code", "colocated", 2.0, None) > ch07.capacity("code", "colocated", 2.0, 0.05)


def test_links_are_the_published_figures():
    assert ch07.LINKS["infiniband"][0] == 190.0            # Mooncake Transfer Engine, 8 x 400 Gbps RoCE
    assert ch07.LINKS["nvlink"][0] == 8 * 900.0            # NVLink 5: 900 GB/s one way per GPU


def test_transfer_time_by_hand():
    assert ch07.transfer_ms(1000, "ethernet") == pytest.approx((1000 * 163840 / 12.5e9 + 2e-3) * 1e3)


def test_panel_answers_and_moves():
    p = ch07.pd_panel()
    a = p.answer
    assert a == ch07.panel_answer("conv", "3P1D", 1.0, 0.03, "infiniband")
    assert a.capacity == ch07.capacity("conv", "3P1D", 1.0, 0.03) and "</svg>" in p.chart.value
    p.controls["layout"].value = "colocated"
    assert p.answer.capacity == ch07.capacity("conv", "colocated", 1.0, 0.03)
    assert "没有传输" in p.table.value


# --- the executed notebook -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel_and_a_figure(nb):
    assert_saved_one_panel(nb, "pd_panel()")
    assert figures(nb) >= 1
    assert han_chars(nb) > 1800
    assert len(checked_cells(nb)) >= 6


def test_links_the_problems_and_has_a_judge_cell(nb):
    from practice import catalog
    ids = [p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "07"]
    for pid in ids + [141]:
        assert f"judge.py start {pid}" in _prose(nb)
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and "--examples" in judge[0].source.splitlines()[0]


QUOTED = [
    ("1469 token", "1469 / "), ("13 token", "13 / "), ("73.4 : 1", "73.4 : 1"), ("5.5 : 1", "5.5 : 1"),
    ("13.4 倍", "13.4x"), ("70,266", "70,266"), ("5,256", "5,256"), ("2.6 倍", "2.6x"),
    ("2P2D 和 3P1D 都撑到 40 req/s，混合部署只有 30", "conv, TTFT<=1s TPOT<=30ms  colocated     30"),
    ("2P2D 和 3P1D 都撑到 40 req/s，混合部署只有 30", "conv, TTFT<=1s TPOT<=30ms  2P2D          40"),
    ("2P2D 和 3P1D 都撑到 40 req/s，混合部署只有 30", "conv, TTFT<=1s TPOT<=30ms  3P1D          40"),
    ("混合部署 50，3P1D 也是 50，打平", "conv, TTFT<=2s TPOT<=50ms  colocated     50"),
    ("混合部署 50，3P1D 也是 50，打平", "conv, TTFT<=2s TPOT<=50ms  3P1D          50"),
    ("2P2D 反而只有 40", "conv, TTFT<=2s TPOT<=50ms  2P2D          40"),
    ("1P3D 只撑到 10 req/s", "conv, TTFT<=1s TPOT<=30ms  1P3D          10"),
    ("放宽到 2 s、50 ms 也只有 20", "conv, TTFT<=2s TPOT<=50ms  1P3D          20"),
    ("30 ms 下都是 30，50 ms 下都是 50", "conv, TTFT<=1s TPOT<=30ms  colocated-2k  30"),
    ("30 ms 下都是 30，50 ms 下都是 50", "conv, TTFT<=2s TPOT<=50ms  colocated-2k  50"),
    ("6.7 ms", "6.7 ms"),
    ("预算 8192 的混合部署一档都撑不住（0）", "code, TTFT<=2s TPOT<=50ms  colocated     0 "),
    ("预算 2048 的混合部署和 2P2D、3P1D 都只撑到 2 req/s", "code, TTFT<=2s TPOT<=50ms  colocated-2k  2 "),
    ("预算 2048 的混合部署和 2P2D、3P1D 都只撑到 2 req/s", "code, TTFT<=2s TPOT<=50ms  2P2D          2 "),
    ("预算 2048 的混合部署和 2P2D、3P1D 都只撑到 2 req/s", "code, TTFT<=2s TPOT<=50ms  3P1D          2 "),
    ("都成了 PD 赢（2 对 0）", "PD: 0 vs 3P1D 2"), ("都成了 PD 赢（2 对 0）", "PD: 0 vs 2P2D 2"),
    ("只撑 20 req/s，2P2D 撑 30～40", "PD: 20 vs 2P2D 30"), ("只撑 20 req/s，2P2D 撑 30～40", "PD: 20 vs 2P2D 40"),
    ("混合部署 30，最好的 PD 配比 40（TTFT 卡到 0.5 s 时是 3P1D，其余是 2P2D）", "TTFT<=0.5s  PD: 20 vs 2P2D 30  PD: 30 vs 3P1D 40"),
    ("混合部署 30，最好的 PD 配比 40（TTFT 卡到 0.5 s 时是 3P1D，其余是 2P2D）", "TTFT<=1s    PD: 20 vs 2P2D 40  PD: 30 vs 2P2D 40"),
    ("混合部署 50 对 3P1D 50，打平", "tie: 50 vs 3P1D 50"),
    ("40 对 30（TPOT 30 ms）", "PD: 30 vs 2P2D 40"), ("40 对 20（TPOT 20 ms）", "PD: 20 vs 2P2D 40"),
    ("打平（50 对 50）", "tie: 50 vs 3P1D 50"),
    ("160 KiB", "160 KiB"), ("167 MB", "167 MB"), ("1.9 ms", "1.9 ms"), ("7.4 ms", "7.4 ms"),
    ("29.3 ms", "29.3 ms"), ("99.5 ms", "99.5 ms"), ("431.5 ms", "431.5 ms"), ("P99 传输是 4.5 ms", "4.5 ms"),
    ("从 4.5 ms 变成 55.9 ms", "55.9 ms"), ("从 29.4% 降到 28.4%", "nvlink      0.10 ms       29.4%"),
    ("从 29.4% 降到 28.4%", "ethernet    55.9 ms       28.4%"),
    # the code trace judged on other SLOs
    ("超 TPOT 的却有 1.2%", "colocated     0.0% / 1.2%"), ("预算 2048 的是 1.0%", "colocated-2k  0.0% / 1.0%"),
    ("13.0% 和 13.7%", "colocated     0.0% / 1.2%                0.0% / 13.0%"),
    ("13.0% 和 13.7%", "colocated-2k  0.0% / 1.0%                0.2% / 13.7%"),
    ("预算 2048 的也只有 0.2%", "colocated-2k  0.0% / 1.0%                0.2% / 13.7%"),
    ("2P2D 有 14.2% 超过 2 s", "2P2D          0.0% / 0.0%                14.2% / 0.0%"),
    ("3P1D 的三个 prefill 实例也有 3.6%", "3P1D          0.0% / 0.0%                3.6% / 0.0%"),
    ("两种预算的混合部署都撑到 4 req/s，最好的 PD 配比（2P2D、3P1D）只有 2",
     "colocated     0.0% / 1.2%                0.0% / 13.0%               0                    4              2"),
    ("两种预算的混合部署都撑到 4 req/s，最好的 PD 配比（2P2D、3P1D）只有 2",
     "colocated-2k  0.0% / 1.0%                0.2% / 13.7%               2                    4              2"),
    ("两种预算的混合部署都撑到 4 req/s，最好的 PD 配比（2P2D、3P1D）只有 2",
     "2P2D          0.0% / 0.0%                14.2% / 0.0%               2                    2              2"),
    ("两种预算的混合部署都撑到 4 req/s，最好的 PD 配比（2P2D、3P1D）只有 2",
     "3P1D          0.0% / 0.0%                3.6% / 0.0%                2                    2              2"),
    ("混合部署降到 2，和 2P2D、3P1D 打平",
     "colocated     0.0% / 1.2%                0.0% / 13.0%               0                    4              2"),
    ("1.0% 对 1.2%", "colocated     0.0% / 1.2%"), ("13.7% 对 13.0%", "colocated-2k  0.0% / 1.0%                0.2% / 13.7%"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"
