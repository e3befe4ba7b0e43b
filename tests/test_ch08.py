"""Chapter 08 (speculative decoding): the helpers in course/ch08.py by hand and against sim, the
switch by load and the day it runs, the panel without a kernel, and the executed notebook (in
order, no errors, widget state saved, every figure the prose quotes printed by a cell).
Re-execute with `PYTHONPATH=$PWD python notebooks/run_notebooks.py 08`."""

import dataclasses
import itertools
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import numpy as np
import pytest

from course import ch04, ch08
from course.ch04 import SpecPoint
from practice import catalog
from sim import presets
from sim.speculative import Speculative
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel, has_svg_chart
from chapter_notebook import code_cells as _code, checked_cells, figures, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "08-speculative-decoding.ipynb"
PROBLEMS = (150, 151, 152, 163, 170)


@pytest.fixture(scope="module")
def base():
    return ch08.base_setup()


# --- the closed form and the step-level form -----------------------------------------------------

def test_step_speedup_by_hand_and_equal_to_the_closed_form_while_memory_bound(base):
    spec = Speculative(k=4, alpha=0.8, draft_cost=0.05)
    b, ctx = 64, 1128
    plain, verify = base.step_time(b, b * ctx, 0, b), base.step_time(5 * b, b * ctx, 0, b)
    assert ch08.step_speedup(base, spec, b, ctx) == spec.tokens_per_step() * plain / (verify + 4 * 0.05 * plain)
    assert ch08.step_speedup(base, spec, 1) == pytest.approx(spec.speedup(), rel=1e-12)
    # compute-bound: verifying 5 tokens per decoder costs more than the tokens it saves
    assert ch08.step_speedup(base, spec, 512) < 1 < ch08.step_speedup(base, spec, 64)


def test_step_crossover_is_the_first_batch_at_or_below_1x(base):
    spec = Speculative(k=4, alpha=0.7, draft_cost=0.05)
    b = ch08.step_crossover_batch(base, spec)
    assert ch08.step_speedup(base, spec, b - 1) > 1 >= ch08.step_speedup(base, spec, b)
    assert ch08.step_crossover_batch(base, Speculative(k=4, alpha=0.9, draft_cost=0.05)) > b
    assert ch08.step_crossover_batch(base, spec, limit=10) is None



def test_calibrated_fixed_time_pushes_the_crossover_past_the_instance_batch_limit(base):
    """Section 2's claim: the calibrated preset's larger fixed time per step moves every crossover
    later; at alpha 0.6 and 0.7 still inside max_num_seqs, at 0.8 past it (never a loss on that
    instance), at 0.9 not at all."""
    cal = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")
    assert cal.step_overhead > 3 * base.step_overhead
    spec = {a: Speculative(k=4, alpha=a, draft_cost=0.05) for a in (0.6, 0.7, 0.8, 0.9)}
    for a in (0.6, 0.7, 0.8):
        assert ch08.step_crossover_batch(cal, spec[a]) > ch08.step_crossover_batch(base, spec[a])
    assert ch08.step_crossover_batch(cal, spec[0.7]) <= cal.max_num_seqs
    assert ch08.step_speedup(cal, spec[0.7], cal.max_num_seqs) < 1
    assert ch08.step_crossover_batch(cal, spec[0.8]) > cal.max_num_seqs
    assert ch08.step_speedup(cal, spec[0.8], cal.max_num_seqs) > 1
    assert ch08.step_crossover_batch(cal, spec[0.9]) is None


def _points(*pairs):
    return [SpecPoint(c, s, 1.0, 1.0, 1.0) for c, s in pairs]      # speedup = tpot_plain / 1.0


def test_crossover_interpolates_in_log_concurrency():
    c = ch08.crossover(_points((16, 2.0), (64, 1.2), (128, 0.9), (256, 0.8)))
    assert c == pytest.approx(64 * 2 ** (0.2 / 0.3))
    assert ch08.crossover(_points((1, 2.0), (256, 1.01))) is None
    assert ch08.crossover(_points((1, 0.9), (4, 0.8))) == 1.0


def test_simulation_meets_the_closed_form_at_low_load_and_the_step_form_at_the_crossover(base):
    for alpha in (0.6, 0.8):
        one = ch08.spec_vs_load(base, 4, alpha, 0.05, (1,))[0]
        assert one.speedup == pytest.approx(Speculative(k=4, alpha=alpha, draft_cost=0.05).speedup(), rel=0.03)
        simulated = ch08.crossover(ch08.spec_vs_load(base, 4, alpha, 0.05, ch08.CLIENTS))
        step = ch08.step_crossover_batch(base, Speculative(k=4, alpha=alpha, draft_cost=0.05))
        assert simulated == pytest.approx(step, rel=0.15)


def test_crossover_figure_marks_each_alpha(base):
    fig = ch08.crossover_figure(base, alphas=(0.6, 0.8), clients=(1, 16, 64, 128, 256))
    left = fig.axes[0]
    curves = [ln for ln in left.get_lines() if ln.get_label().startswith("alpha=")]
    assert [ln.get_label() for ln in curves] == ["alpha=0.6", "alpha=0.8"]
    x, y = curves[0].get_data()
    assert list(x) == [1, 16, 64, 128, 256] and y[0] > 1 > y[-1]
    marks = [ln for ln in left.get_lines() if ln.get_label().startswith("_") and ln.get_linestyle() == ":"]
    pts = ch08.spec_vs_load(base, 4, 0.6, 0.05, (1, 16, 64, 128, 256))
    assert marks[0].get_xdata()[0] == pytest.approx(ch08.crossover(pts))


# --- draft costs --------------------------------------------------------------------------------

def test_eagle_draft_cost_by_hand():
    m = presets.model("llama-3-70b")
    layer = (m.total_params - 2 * m.vocab * m.hidden) / m.layers
    assert ch08.eagle_draft_cost() == (layer + m.vocab * m.hidden) / m.total_params
    assert 0.02 < ch08.eagle_draft_cost() < 0.04


def test_draft_model_cost_is_the_ratio_of_the_presets_steps():
    d = presets.instance("llama-3-8b", "h100-sxm", tp=8, weight_dtype="fp8")
    t = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")
    assert ch08.draft_model_cost("llama-3-8b") == d.step_time(1, 1000, 0, 1) / t.step_time(1, 1000, 0, 1)
    # the fixed part of a step makes a small model's step far dearer than its share of the weights
    assert ch08.draft_model_cost("llama-3-8b") > 3 * 8.0 / 70.6


def test_best_k_is_the_brute_force_maximum_and_chapter_04s():
    for alpha, cost in ((0.6, 0.05), (0.8, 0.027), (0.85, 0.2)):
        k, s = ch08.best_k(alpha, cost, 8)
        assert s == max(Speculative(k=j, alpha=alpha, draft_cost=cost).speedup() for j in range(1, 9))
        assert (k, s) == pytest.approx(ch04.best_draft_length(alpha, cost, 8))


# --- tree drafts --------------------------------------------------------------------------------

def test_chain_accepted_by_hand():
    assert ch08.chain_accepted(0.5, 3) == 0.5 + 0.25 + 0.125
    assert ch08.chain_accepted(0.9, 0) == 0


def test_best_tree_hand_worked():
    # q = (0.5, 0.3): take 0.5 (depth 1), then its sibling 0.3, then 0.5's child 0.25
    assert ch08.best_tree((0.5, 0.3), 3) == (pytest.approx(1.05), [2, 1])
    assert ch08.best_tree((0.3, 0.5), 3) == (pytest.approx(1.05), [2, 1])       # ranks are sorted first
    assert ch08.best_tree((0.6,), 5)[0] == pytest.approx(ch08.chain_accepted(0.6, 5))
    assert ch08.best_tree((0.6, 0.2), 0) == (0.0, [])


def _brute_force_tree(q, budget):
    """Every path of ranks up to depth ``budget``, its chance the product of its ranks'; the best
    ``budget`` nodes' chances summed (a plain reference for the greedy)."""
    chances = [math.prod(q[r] for r in path) for d in range(1, budget + 1)
               for path in itertools.product(range(len(q)), repeat=d)]
    return sum(sorted(chances, reverse=True)[:budget])


@pytest.mark.parametrize("q", [(0.6, 0.15, 0.07, 0.04), (0.4, 0.4, 0.1), (0.8, 0.0, 0.1), (0.25,) * 4])
def test_best_tree_equals_the_brute_force(q):
    for n in range(1, 7):
        assert ch08.best_tree(q, n)[0] == pytest.approx(_brute_force_tree(q, n), rel=1e-12)


def test_best_tree_rejects_bad_input():
    for bad in ((), (0.7, 0.5), (-0.1,), (1.2,)):
        with pytest.raises(ValueError, match="rank_accept"):
            ch08.best_tree(bad, 4)
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="budget"):
            ch08.best_tree((0.5,), bad)


def test_tree_step_speedup_of_a_chain_is_step_speedup(base):
    spec = Speculative(k=4, alpha=0.7, draft_cost=0.05)
    for b in (1, 32, 128):
        assert ch08.tree_step_speedup(base, ch08.chain_accepted(0.7, 4), 4, 4, 0.05, b) == \
            pytest.approx(ch08.step_speedup(base, spec, b), rel=1e-12)


# --- the switch by load and the day ----------------------------------------------------------

def test_load_switch_hysteresis():
    sw = ch08.LoadSwitch(off_above=90, on_below=70)
    assert sw.decide(91, True) is False and sw.decide(90, True) is True
    assert sw.decide(80, False) is False and sw.decide(80, True) is True       # in between: keep
    assert sw.decide(70, False) is True
    states, on = [], True
    for running in (10, 95, 85, 75, 69, 85, 100):
        on = sw.decide(running, on)
        states.append(on)
    assert states == [True, False, False, False, True, True, False]


def test_load_switch_rejects_bad_input():
    with pytest.raises(ValueError, match="on_below"):
        ch08.LoadSwitch(off_above=50, on_below=60)
    for bad in (-1, math.nan, math.inf, True, "9"):
        with pytest.raises(ValueError, match="off_above"):
            ch08.LoadSwitch(off_above=bad, on_below=0)
    with pytest.raises(ValueError, match="running"):
        ch08.LoadSwitch(10, 5).decide(math.nan, True)


def test_hours_cover_the_day_once():
    day = ch08.day_load(20.0)
    counted = [ch08._hour_slice(day, h)[1] for h in range(ch08.DAY_HOURS)]
    assert sum(counted) == len(day.arrival)
    peak, night = counted[14], counted[2]
    assert peak > 3 * night


@pytest.fixture(scope="module")
def day(base):
    spec = Speculative(k=4, alpha=0.8, draft_cost=0.05)
    sw = ch08.LoadSwitch(off_above=90, on_below=70)
    return spec, sw, {p: ch08.run_day(base, spec, p, sw, mean_rate=20.0) for p in ("off", "on", "switched")}


def test_switched_day_replays_the_switch_hour_by_hour(base, day):
    spec, sw, runs = day
    on_setup = dataclasses.replace(base, speculative=spec)
    assert runs["off"].on_hours == () and runs["on"].on_hours == tuple(range(24))
    on, expected = True, []
    for h in range(24):
        if h:
            on = sw.decide(runs["switched"].hours[h - 1].running, on)
        expected.append(on)
        assert runs["switched"].hours[h] is ch08.hour_run(on_setup if on else base, h, 20.0, 5.0)
    assert runs["switched"].on_hours == tuple(h for h, m in enumerate(expected) if m)
    assert 0 < len(runs["switched"].on_hours) < 24


def test_switched_day_takes_the_best_of_both(day):
    _, _, runs = day
    assert len(runs["off"].tpot) == len(runs["on"].tpot) == len(runs["switched"].tpot)
    assert runs["switched"].tpot_ms() < runs["on"].tpot_ms() < runs["off"].tpot_ms()
    ttft99 = {p: np.percentile(r.ttft, 99) for p, r in runs.items()}
    assert ttft99["switched"] < 0.5 * ttft99["on"]
    assert runs["switched"].slo_ok() >= max(runs["off"].slo_ok(), runs["on"].slo_ok())


def test_run_day_rejects_bad_policies(base):
    spec = Speculative()
    with pytest.raises(ValueError, match="policy"):
        ch08.run_day(base, spec, "sometimes")
    with pytest.raises(ValueError, match="LoadSwitch"):
        ch08.run_day(base, spec, "switched")


# --- the panel ---------------------------------------------------------------------------------

def test_panel_answers_from_cached_runs_and_moves_with_its_controls(base):
    p = ch08.spec_load_panel(base)
    a = p.answer
    assert a["off"] == ch08.poisson_point(base, 10)
    assert a["on"] == ch08.poisson_point(dataclasses.replace(base, speculative=Speculative(4, 0.8, 0.05)), 10)
    assert "goodput" in p.table.value and "</svg>" in p.chart.value
    assert set(p.figure.labels()) == {"step-level speedup", "1x", "running requests at this load (on)"}
    assert p.figure.line_data("running requests at this load (on)")[0][0] == max(1.0, a["on"]["running"])
    p.controls["rate"].value = 30
    p.controls["k"].value = 8
    on, off = p.answer["on"], p.answer["off"]
    assert on["tpot_mean"] > off["tpot_mean"]          # k = 8 at 30 req/s: past its crossover
    assert ch08.step_speedup(base, p.answer["spec"], round(on["running"])) < 1
    p.controls["k"].value = 4
    assert p.answer["on"]["tpot_mean"] < off["tpot_mean"]
    assert ch08.panel_requests(2) == 150 and ch08.panel_requests(30) == 600


# --- the executed notebook -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel(nb):
    assert has_svg_chart(assert_saved_one_panel(nb, "spec_load_panel()"))


def test_checked_cells_figures_and_chinese_prose(nb):
    checked = checked_cells(nb)
    assert len(checked) >= 6
    assert figures(nb) >= 2
    han = han_chars(nb)
    assert han > 2500
    for heading in ("公式和模拟", "交叉点", "EAGLE", "MTP", "树形草稿", "按负载开关", "交互面板", "思考题", "练习"):
        assert heading in _prose(nb)
    assert "04-design-answers-2.ipynb" in _prose(nb)          # builds on chapter 04's Q7


def test_links_every_chapter_08_problem_and_has_a_judge_cell(nb):
    here = [p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "08"]
    assert 150 in here
    for pid in set(PROBLEMS) | set(here):
        assert f"judge.py start {pid}`" in _prose(nb)
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and judge[0].source.splitlines()[0] == "%%judge 150 --examples"
    assert any("%load_ext practice" in c.source for c in _code(nb))


# Figures the prose quotes, each as the prose writes it and as a cell prints it.
QUOTED = [
    ("公式、模拟都是 2.80x", "2.80x              2.80x"), ("模拟 1.54x，公式 1.52x", "1.52x              1.54x"),
    ("公式 4.38x，模拟只有 4.22x", "4.38x              4.22x"),
    ("68 个并发用户", " 68 "), ("0.7 时 92 个", " 92 "), ("0.8 时 126 个", " 126 "), ("到 256 个用户还刚好持平", "> 256"),
    ("75、98、130、177", "75 / 98 / 130 / 177"), ("10.0 ms（手册规则是 4.1 ms）", "step 10.0 ms"),
    ("10.0 ms（手册规则是 4.1 ms）", "step  4.1 ms"), ("alpha = 0.7 时从 98 挪到 372", "/ 372 /"), ("alpha = 0.6 时从 75 挪到 156", ": 156 /"),
    ("alpha = 0.6 时从 75 挪到 156", ": 75 /"), ("alpha = 0.8 时从 130 挪到 2631", "/ 2631 /"), ("alpha = 0.8 时从 130 挪到 2631", "/ 130 /"),
    ("alpha = 0.9 时到 batch 4096 都找不到交叉点（表里的 None）", "/ None"),
    ("好几倍（alpha = 0.7 时 98 对 372，alpha = 0.8 时 130 对 2631", "/ 2631 /"),
    ("权重只占 0.113", "0.113 of the weights"), ("一步却占 0.37", "0.37 of a step"),
    ("最好的 k 只有 2，低负载也只有 1.26x（模拟 1.27x）", "2        1.26x   1.27x"),
    ("64 个用户时就只剩 1.01x", "1.27x  1.01x"),
    ("草稿头只占 0.027", "0.027 of the weights"), ("低负载公式 3.56x、模拟 3.51x", "3.56x   3.51x"),
    ("128 个用户时已经是 0.90x", "1.10x  0.90x"), ("低负载 1.82x", "1.82x   1.82x"),
    ("128 个用户时仍有 1.08x，256 个用户时 1.02x", "1.27x  1.08x  1.02x"),
    ("1.33 对 1.31", "1.31                 1.33"), ("16 个节点时已经是 1.50", "1.50                 2.12"),
    ("16 个节点 2.12、32 个节点 2.52", "2.52"), ("2.40x 对 1.92x", "1.92x                 2.40x"),
    ("树已经是 0.91x，链还有 1.69x", "1.69x                 0.91x"), ("慢了近一倍", "0.53x"),
    ("平均 TPOT 14.0 ms", "14.0 ms"), ("降到 12.7 ms", "12.7 ms"), ("P99 TTFT 涨到 1.38 s", "1.38 s"),
    ("（70.0%）", "70.0%"), ("开了 17 个小时", "switched        17"), ("平均 TPOT 11.8 ms", "11.8 ms"),
    ("P99 TTFT 0.33 s", "0.33 s"), ("（71.5%）", "71.5%"), ("和始终关差不多", "0.31 s"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"
