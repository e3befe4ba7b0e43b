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
    # the prose: 2P2D is TTFT-bound (its capacity does not move with TPOT), 3P1D is TPOT-bound (50,
    # 40, 30 req/s as TPOT tightens from 50 to 20 ms), and the colocated fleet wins at TPOT 50 ms
    for ttft in (1.0, 2.0):
        pd2 = [ch07.capacity("conv", "2P2D", ttft, tpot) for tpot in ch07.SLO_TPOT]
        assert len(set(pd2)) == 1
        assert [ch07.capacity("conv", "3P1D", ttft, tpot) for tpot in (0.05, 0.03, 0.02)] == [50, 40, 30]
        assert ch07.verdict("conv", ttft, 0.02).best_pd == "2P2D"
    for ttft in ch07.SLO_TTFT:
        assert ch07.verdict("conv", ttft, 0.05).winner == "colocated"


def test_every_pd_win_on_the_code_trace_is_the_tpot_slo():
    # the prose: wherever PD wins the code grid, the colocated fleet meets the same TTFT without TPOT judged
    wins = [(t, p) for t in ch07.SLO_TTFT for p in ch07.SLO_TPOT if ch07.verdict("code", t, p).winner == "PD"]
    assert wins and any(t == 0.5 for t, _ in wins)
    for t, p in wins:
        assert ch07.capacity("code", "colocated", t, None) >= ch07.verdict("code", t, p).pd


def test_the_small_chunk_does_not_help_the_code_trace():
    # the prose: end to end (5 s) both budgets hold 4 req/s; judged on TTFT alone the 2048-token
    # budget holds one step less (4 against 6)
    e2e = [ch07.capacity("code", lay, 2.0, None, e2e_slo=5.0) for lay in ("colocated", "colocated-2k")]
    assert e2e == [4, 4]
    assert ch07.capacity("code", "colocated-2k", 2.0, None) < ch07.capacity("code", "colocated", 2.0, None)


def test_a_2048_token_mixed_step_is_itself_over_the_50ms_tpot():
    # the prose: a step carrying one 2048-token chunk still takes about seventy ms (over the 50 ms
    # TPOT), an 8192-token one about 0.24 s; the TPOT misses of the short answers are about the
    # same under both budgets (8.9% and 10.7% at 4 req/s)
    s = ch07.setup()
    for decoders in (0, 50):
        ctx = 1500 * decoders
        assert 0.065 < s.step_time(2048 + decoders, 2048 + ctx, decoders=decoders) < 0.08
        assert 0.22 < s.step_time(8192 + decoders, 8192 + ctx, decoders=decoders) < 0.27
    big, small = (ch07.misses(ch07.run("code", lay, 4), 2.0, 0.05)[1] for lay in ("colocated", "colocated-2k"))
    assert abs(big - small) < 0.02 and small > 0.1


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
    ("2P2D 撑到 50 req/s，混合部署只有 40", "2P2D          50"), ("混合部署只有 40", "colocated     40"),
    ("混合部署 60，最好的 PD 配比（2P2D 或 3P1D）50", "colocated     60"),
    ("混合部署 60，最好的 PD 配比（2P2D 或 3P1D）50", "3P1D          50"),
    ("6.7 ms", "6.7 ms"), ("PD 赢（2 或 4 对 0）", "PD: 0 vs 3P1D 2"), ("PD 赢（2 或 4 对 0）", "PD: 0 vs 3P1D 4"),
    ("3P1D 撑到 4 req/s，混合部署只有 2", "PD: 2 vs 3P1D 4"),
    ("只撑 20 req/s，2P2D 撑 40～50", "PD: 20 vs 2P2D 40"), ("只撑 20 req/s，2P2D 撑 40～50", "PD: 20 vs 2P2D 50"),
    ("混合部署 40、2P2D 50", "PD: 40 vs 2P2D 50"), ("打平，40 对 40", "tie: 40 vs 2P2D 40"),
    ("混合部署是 60，PD 最好也只有 50", "colocated: 60 vs 2P2D 50"), ("（50 对 60）", "colocated: 60 vs 2P2D 50"),
    ("50 对 40（TPOT 30 ms）", "PD: 40 vs 2P2D 50"), ("50 对 20（TPOT 20 ms）", "PD: 20 vs 2P2D 50"),
    ("160 KiB", "160 KiB"), ("167 MB", "167 MB"), ("1.9 ms", "1.9 ms"), ("7.4 ms", "7.4 ms"),
    ("29.3 ms", "29.3 ms"), ("99.5 ms", "99.5 ms"), ("431.5 ms", "431.5 ms"), ("P99 传输是 4.5 ms", "4.5 ms"),
    ("从 4.5 ms 变成 55.9 ms", "55.9 ms"), ("从 77.1% 降到 75.0%", "nvlink      0.10 ms       77.1%"),
    ("从 77.1% 降到 75.0%", "ethernet    55.9 ms       75.0%"),
    # the code trace judged on other SLOs
    ("超 TPOT 的是 0.4%", "colocated     0.0% / 0.4%"), ("跳到 8.9%", "colocated     0.0% / 0.4%                0.0% / 8.9%"),
    ("2P2D 有 10.7% 超过 2 s", "2P2D          0.0% / 0.0%                10.7% / 0.0%"),
    ("8.9% 对 10.7%", "colocated-2k  0.0% / 0.7%                0.0% / 10.7%"),
    ("混合部署撑到 6 req/s，最好的 PD 配比（3P1D）只有 4",
     "colocated     0.0% / 0.4%                0.0% / 8.9%                2                    6              4"),
    ("混合部署撑到 6 req/s，最好的 PD 配比（3P1D）只有 4",
     "3P1D          0.0% / 0.0%                0.0% / 0.0%                4                    4              4"),
    ("混合部署撑到 6 req/s，最好的 PD 配比（3P1D）只有 4",
     "2P2D          0.0% / 0.0%                10.7% / 0.0%               2                    2              2"),
    ("两种预算的混合部署都是 4，和 3P1D 打平",
     "colocated-2k  0.0% / 0.7%                0.0% / 10.7%               2                    4              4"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"
