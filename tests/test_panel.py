"""course.panel: pure computations first, then the widgets driven by setting slider values."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from course import explain, panel, plots
from sim import Setup, plan, simulate


def test_chapter_setup_is_the_chapters_instance():
    kv = 2 * 80 * 8 * 128 * 1
    assert panel.chapter_setup() == Setup(
        params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=kv,
        kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / kv), peak_flops=8 * 1979e12,
        bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3, max_num_batched_tokens=8192,
        max_num_seqs=512)


def test_default_design_gives_the_chapters_figures():
    d = panel.design()
    assert d.feasible
    assert f"{d.rate_per_instance:.1f}" == "16.8"
    assert (d.instances_no_headroom, d.instances, d.gpus) == (12, 16, 128)
    assert d.usd_per_hour == 320
    assert f"{d.usd_per_million_output_tokens:.2f}" == "0.89"
    assert round(d.low_load_ttft_s * 1e3) == 48 and f"{d.low_load_tpot_s * 1e3:.1f}" == "4.3"
    assert d.bound == "prefill_compute"
    assert "4.1 ms" in d.explanation[0] and "46.1 ms" in d.explanation[1] and "17.9 req/s" in d.explanation[2]


@pytest.mark.parametrize("qps, price", [(200, 2.5), (37, 1.75), (2000, 8.0)])
def test_design_matches_sim_plan(qps, price):
    d = panel.design(qps, 2000, 500, 0.4, price)
    p = plan(qps, panel.chapter_setup(), 2000, 500, 2.0, 0.05, gpus_per_instance=8, headroom=1.3,
             gpu_hour_usd=price)
    assert d.rate_per_instance == p.rate_per_instance
    assert (d.instances_no_headroom, d.instances, d.gpus) == (p.instances_no_headroom, p.instances, p.gpus)
    assert d.usd_per_hour == pytest.approx(p.usd_per_hour)
    assert d.usd_per_million_output_tokens == pytest.approx(p.usd_per_million_output_tokens)
    assert (d.bound, d.low_load_ttft_s, d.low_load_tpot_s) == (p.bound, p.low_load_ttft_s, p.low_load_tpot_s)


def test_infeasible_position_says_why():
    d = panel.design(200, 32768, 4096, 0.1)
    assert not d.feasible and d.bound == "infeasible" and d.instances is None
    assert d.low_load_ttft_s > 2.0 and "TTFT" in d.reason
    assert any("无解" in line for line in d.explanation)
    html = panel.design_html(d)
    assert "无解" in html and "—" in html


def test_table_covers_every_slider_position_and_is_trusted():
    table = panel._table()
    keys = {(i, o, m) for i in panel.INPUT_OPTIONS for o in panel.OUTPUT_OPTIONS for m in panel.mfu_options()}
    assert set(table) == keys, "rebuild with: python -m course.panel --build-table"


@pytest.mark.parametrize("key", [(2000, 500, 0.4), (128, 16, 0.8), (1024, 64, 0.25), (32768, 4096, 0.1)])
def test_table_rows_equal_live_computation(key):
    row = panel._table()[key]
    assert row == tuple(panel.compute_instance(*key).__dict__.values())


def test_mfu_options_are_the_sliders_steps():
    opts = panel.mfu_options()
    assert opts[0] == 0.1 and opts[-1] == 0.8 and len(opts) == 15 and 0.4 in opts


# --- The chapter-02 panel, driven through its sliders ----------------------------------------

@pytest.fixture(scope="module")
def design_panel():
    return panel.design_panel()


def _curve_lines(p):
    return plots.line_data(p.figure, "p99 TTFT"), plots.line_data(p.figure, "p99 TPOT")


def test_panel_starts_at_the_chapters_answer(design_panel):
    p = design_panel
    assert p.design == panel.design()
    assert "16.8 req/s" in p.table.value and "12 / 16" in p.table.value and "$320" in p.table.value
    assert p.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    x, _ = plots.line_data(p.figure, "chosen rate")
    assert x[0] == pytest.approx(p.design.rate_per_instance)
    (rates, ttft), _ = _curve_lines(p)
    assert np.allclose(rates, p.curve.rates) and np.allclose(ttft, p.curve.ttft_p99 * 1e3)


def test_qps_slider_moves_instances_not_the_curve(design_panel):
    p = design_panel
    before, curve, image = p.design, p.curve, p.image.value
    p.sliders["qps"].value = 1000
    assert p.design.qps == 1000
    assert p.design.instances == math.ceil(1000 / before.rate_per_instance * 1.3) > before.instances
    assert p.design.usd_per_hour > before.usd_per_hour
    assert p.design.rate_per_instance == before.rate_per_instance
    assert p.curve is curve and p.image.value == image          # nothing to redraw
    assert f"{p.design.instances_no_headroom} / {p.design.instances}" in p.table.value
    p.sliders["qps"].value = 200
    assert p.design == before


def test_price_slider_scales_cost(design_panel):
    p = design_panel
    before = p.design
    p.sliders["gpu_hour_usd"].value = 5.0
    assert p.design.usd_per_hour == pytest.approx(2 * before.usd_per_hour)
    assert p.design.usd_per_million_output_tokens == pytest.approx(2 * before.usd_per_million_output_tokens)
    assert p.design.gpus == before.gpus
    assert "$640" in p.table.value
    p.sliders["gpu_hour_usd"].value = 2.5


@pytest.mark.parametrize("name, value", [("input_len", 4096), ("output_len", 256), ("mfu", 0.6)])
def test_shape_and_mfu_sliders_move_rate_and_curve(design_panel, name, value):
    p = design_panel
    before, (ttft_before, tpot_before), image = p.design, _curve_lines(p), p.image.value
    default = p.sliders[name].value
    p.sliders[name].value = value
    try:
        assert getattr(p.design, name) == value
        assert p.design.rate_per_instance != before.rate_per_instance
        ttft_after, tpot_after = _curve_lines(p)
        assert not np.array_equal(ttft_after[0], ttft_before[0])        # rates are re-centred
        assert not np.array_equal(tpot_after[1], tpot_before[1])
        x, _ = plots.line_data(p.figure, "chosen rate")
        assert x[0] == pytest.approx(p.design.rate_per_instance)
        assert p.image.value != image
        assert f"{explain.fmt_rate(p.design.rate_per_instance)} req/s" in p.table.value
    finally:
        p.sliders[name].value = default
    assert p.design == before


def test_directions_make_sense():
    base = panel.design()
    assert panel.design(200, 2000, 500, 0.8).rate_per_instance > base.rate_per_instance      # more compute
    assert panel.design(200, 4096, 500, 0.4).rate_per_instance < base.rate_per_instance      # longer prompts
    assert panel.design(200, 4096, 500, 0.4).low_load_ttft_s > base.low_load_ttft_s
    assert panel.design(400, 2000, 500, 0.4).gpus >= 2 * base.gpus - 8


def test_slider_ranges_match_the_issue():
    p = panel.design_panel()
    s = p.sliders
    assert (s["qps"].options[0], s["qps"].options[-1]) == (10, 2000)
    assert (s["input_len"].options[0], s["input_len"].options[-1]) == (128, 32768)
    assert (s["output_len"].options[0], s["output_len"].options[-1]) == (16, 4096)
    assert (s["mfu"].min, s["mfu"].max) == (0.1, 0.8)
    assert all(not w.continuous_update for w in s.values())


# --- The chapter-01 rate panel ---------------------------------------------------------------

def test_rate_panel_moves_the_distribution():
    p = panel.rate_panel()
    low = p.dist
    x_low, _ = plots.line_data(p.figure, "TTFT CDF")
    p.slider.value = 18
    high = p.dist
    x_high, y_high = plots.line_data(p.figure, "TTFT CDF")
    assert high.rate == 18 and low.rate == 10
    assert high.stats["ttft_p99"] > low.stats["ttft_p99"] and high.stats["tpot_p99"] > low.stats["tpot_p99"]
    assert high.stats["slo_ok"] < low.stats["slo_ok"]
    assert not np.array_equal(x_low, x_high)
    assert np.allclose(x_high, np.sort(high.ttft) * 1e3) and y_high[-1] == 1.0
    assert f"{high.stats['slo_ok']:.1%}" in p.table.value


def test_distribution_stats_match_summarize():
    from sim import summarize
    d = panel.distribution(16)
    s = summarize(simulate(panel.chapter_setup(), 16, 1500, 2000, 500), 2.0, 0.05)
    for key in ("ttft_mean", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "slo_ok", "goodput"):
        assert d.stats[key] == pytest.approx(s[key]), key


# --- The hand calculations --------------------------------------------------------------------

def test_estimates_are_the_chapters_arithmetic():
    e = explain.estimate(panel.chapter_setup(), 2000, 500)
    assert e.weight_read_s == pytest.approx(70.6e9 / 26.8e12)
    assert e.tpot_floor_s * 1e3 == pytest.approx(4.13, abs=0.01)
    assert e.ttft_floor_s * 1e3 == pytest.approx(46.1, abs=0.05)
    assert e.compute_rate == pytest.approx(17.94, abs=0.01)
    assert e.decode_batch_compute_bound == pytest.approx(118, abs=1)


def test_littles_law_holds_on_simulated_data():
    check = explain.littles_law(simulate(panel.chapter_setup(), 12, 3000, 2000, 500))
    assert check.mean_in_system == pytest.approx(check.predicted, rel=0.02)
    assert check.arrival_rate == pytest.approx(12, rel=0.05)
