"""course.panel: pure computations first, then the widgets driven by setting slider values."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from course import estimate, explain, panel, plots
from sim import Setup, capacity, plan, planning, presets, simulate


def test_chapter_setup_is_the_chapters_instance():
    kv = 2 * 80 * 8 * 128 * 1
    assert panel.chapter_setup() == Setup(
        params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=kv,
        kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / kv), peak_flops=8 * 1979e12,
        bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3, max_num_batched_tokens=8192,
        max_num_seqs=512)


def test_default_design_gives_the_chapters_figures():
    """The chapter's instance on sim.capacity's steady-state trials: 16.1 req/s (the handbook's
    1500-request bisection, 16.8 req/s and 12 / 16 instances, is tests/test_plan.py's search="chapter")."""
    d = panel.design()
    assert d.feasible
    assert f"{d.rate_per_instance:.1f}" == "16.1"
    assert (d.instances_no_headroom, d.instances, d.gpus) == (13, 17, 136)
    assert d.usd_per_hour == 340
    assert f"{d.usd_per_million_output_tokens:.2f}" == "0.94"
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


def test_the_panels_instance_for_the_chapters_choice_is_the_chapters_setup():
    assert panel.instance_setup(panel.CHAPTER, 0.4) == panel.chapter_setup()
    other = panel.instance_setup(panel.Hardware(gpu="h200"), 0.4)
    assert other == presets.instance("llama-3-70b", "h200", tp=8, weight_dtype="fp8", kv_dtype="fp8", mfu=0.4,
                                     step_overhead=1.5e-3, bandwidth_util=1.0)


@pytest.mark.parametrize("hw, qps, inp, out, ttft, tpot", [
    (panel.Hardware("llama-3-8b", "h100-sxm", 1, "bf16", "bf16"), 50, 1024, 256, 1.0, 0.03),
    (panel.Hardware("llama-3-70b", "h200", 4, "fp8", "fp8"), 200, 2000, 500, 2.0, 0.05),
])
def test_other_instances_give_sim_plans_figures(hw, qps, inp, out, ttft, tpot):
    d = panel.design(qps, inp, out, 0.4, 2.5, hw, ttft, tpot)
    p = plan(qps, panel.instance_setup(hw, 0.4), inp, out, ttft, tpot, gpus_per_instance=hw.tp, headroom=1.3,
             gpu_hour_usd=2.5)
    assert d.feasible and d.rate_per_instance == p.rate_per_instance
    assert (d.instances, d.gpus, d.bound) == (p.instances, p.gpus, p.bound)
    assert (d.low_load_ttft_s, d.low_load_tpot_s) == (p.low_load_ttft_s, p.low_load_tpot_s)


@pytest.mark.parametrize("hw, words", [
    (panel.Hardware("llama-3.1-405b", "h100-sxm", 1, "bf16", "bf16"), "does not fit"),
    (panel.Hardware("llama-3-70b", "a100-80gb", 8, "fp8", "fp8"), "FP8"),
])
def test_impossible_combinations_show_the_reason_instead_of_raising(hw, words):
    d = panel.design(hw=hw)
    assert not d.feasible and d.bound == "infeasible" and words in d.reason and "无法部署" in d.reason
    assert words in panel.design_html(d)
    assert panel.latency_curve(2000, 500, 0.4, hw) is None


def test_a_request_larger_than_the_kv_cache_says_so():
    d = panel.design(200, 8192, 1024, 0.4, 2.5, panel.Hardware("llama-3-70b", "h100-sxm", 1, "fp8", "fp8"))
    assert not d.feasible and "KV Cache 只有 8,827 token" in d.reason


def test_what_changed_names_the_rate_the_bound_and_the_ceiling():
    before, after = panel.design(), panel.design(200, 2000, 500, 0.5)
    line = panel.what_changed(before, after, "mfu")
    assert line.startswith("MFU") and "16.1 →" in line and "算力上限 17.9 → 22.4" in line and "GPU 136 →" in line
    assert "无解" in panel.what_changed(before, panel.design(hw=panel.Hardware(gpu="a100-80gb")), "gpu")
    assert "改变" in panel.what_changed(None, before) or "移动" in panel.what_changed(None, before)


def test_mfu_options_are_the_sliders_steps():
    opts = panel.mfu_options()
    assert opts[0] == 0.1 and opts[-1] == 0.8 and len(opts) == 15 and 0.4 in opts


# --- The chapter-02 panel, driven through its sliders ----------------------------------------

@pytest.fixture(scope="module")
def design_panel():
    return panel.design_panel(background=False)


def _curve_lines(p):
    return plots.line_data(p.figure, "p99 TTFT"), plots.line_data(p.figure, "p99 TPOT")


def test_panel_starts_at_the_chapters_answer(design_panel):
    p = design_panel
    assert p.design == panel.design()
    assert "16.1 req/s" in p.table.value and "13 / 17" in p.table.value and "$340" in p.table.value
    assert p.chart.value.startswith("<svg") and "p99 TTFT" in p.chart.value
    x, _ = plots.line_data(p.figure, "chosen rate")
    assert x[0] == pytest.approx(p.design.rate_per_instance)
    (rates, ttft), _ = _curve_lines(p)
    assert np.allclose(rates, p.curve.rates) and np.allclose(ttft, p.curve.ttft_p99 * 1e3)


def test_qps_slider_moves_instances_not_the_curve(design_panel):
    p = design_panel
    before, curve, image = p.design, p.curve, p.chart.value
    p.sliders["qps"].value = 1000
    assert p.design.qps == 1000
    assert p.design.instances == math.ceil(1000 / before.rate_per_instance * 1.3) > before.instances
    assert p.design.usd_per_hour > before.usd_per_hour
    assert p.design.rate_per_instance == before.rate_per_instance
    assert p.curve is curve and p.chart.value == image          # nothing to redraw
    assert "峰值 QPS" in p.changed.value and "GPU 136 →" in p.changed.value
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
    assert "$680" in p.table.value
    p.sliders["gpu_hour_usd"].value = 2.5


@pytest.mark.parametrize("name, value", [("input_len", 4096), ("output_len", 256), ("mfu", 0.6)])
def test_shape_and_mfu_sliders_move_rate_and_curve(design_panel, name, value):
    p = design_panel
    before, (ttft_before, tpot_before), image = p.design, _curve_lines(p), p.chart.value
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
        assert p.chart.value != image
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
    p = panel.design_panel(background=False)
    s = p.sliders
    assert (s["qps"].options[0], s["qps"].options[-1]) == (10, 2000)
    assert (s["input_len"].options[0], s["input_len"].options[-1]) == (128, 32768)
    assert (s["output_len"].options[0], s["output_len"].options[-1]) == (16, 4096)
    assert (s["mfu"].min, s["mfu"].max) == (0.1, 0.8)
    assert (s["ttft_slo"].value, s["tpot_slo"].value) == (2.0, 0.05)
    assert all(not w.continuous_update for w in s.values())
    c = p.choices
    assert (c["model"].value, c["gpu"].value, c["tp"].value, c["weight_dtype"].value, c["kv_dtype"].value) == \
        ("llama-3-70b", "h100-sxm", 8, "fp8", "fp8")
    assert set(c["model"].options) <= set(presets.MODELS) and set(c["gpu"].options) <= set(presets.GPUS)


def test_choosing_another_instance_and_slo_moves_the_answer(design_panel):
    p = design_panel
    before = p.design
    p.choices["gpu"].value = "h200"
    assert p.design.hardware.gpu == "h200" and p.design.rate_per_instance != before.rate_per_instance
    assert "H200" in p.table.value and "GPU" in p.changed.value
    p.choices["gpu"].value = "a100-80gb"                         # no FP8: the reason, no exception
    assert not p.design.feasible and "FP8" in p.table.value and p.chart.value == ""
    p.choices["gpu"].value = "h100-sxm"
    p.sliders["ttft_slo"].value = 0.25
    assert p.design.ttft_slo == 0.25 and p.design.rate_per_instance < before.rate_per_instance
    p.sliders["ttft_slo"].value = 2.0
    assert p.design == before


def test_a_newer_move_supersedes_an_older_one():
    p = panel.design_panel(background=False)
    gen = p._generation
    p._generation += 1                                  # a newer move arrived before this one ran
    p._run(gen, "mfu")
    assert p.superseded == 1
    calls = []
    assert p.update("mfu", current=lambda: calls.append(1) and False) is False   # stops at its first check
    assert p.busy.value == ""


def test_background_updates_end_with_the_latest_move():
    p = panel.design_panel(background=True)
    p.sliders["mfu"].value = 0.45
    p.sliders["mfu"].value = 0.5
    p.wait()
    assert p.design.mfu == 0.5 and p.busy.value == "" and "MFU" in p.changed.value


# --- The chapter-01 rate panel ---------------------------------------------------------------

def test_rate_panel_moves_the_distribution():
    p = panel.rate_panel(background=False)
    low = p.dist
    x_low, _ = plots.line_data(p.figure, "TTFT CDF")
    p.slider.value = 18
    high = p.dist
    x_high, y_high = plots.line_data(p.figure, "TTFT CDF")
    assert high.rate == 18 and low.rate == 10
    assert high.stats["ttft_p99"] > low.stats["ttft_p99"] and high.stats["tpot_p99"] > low.stats["tpot_p99"]
    assert high.stats["slo_ok"] < low.stats["slo_ok"]
    assert not np.array_equal(x_low, x_high)
    assert np.isin(x_high, np.sort(high.ttft) * 1e3).all() and x_high[-1] == high.ttft.max() * 1e3
    assert y_high[-1] == 1.0
    assert f"{high.stats['slo_ok']:.1%}" in p.table.value


def test_rate_panel_takes_the_instance_choice():
    p = panel.rate_panel(background=False)
    p.choices["model"].value = "llama-3-8b"
    assert p.hardware.model == "llama-3-8b" and p.slider.options != panel.RATE_OPTIONS
    assert p.dist.rate == p.slider.value and "Llama" in p.chart.value
    p.choices["model"].value = "llama-3.1-405b"                 # does not fit in 8 x H100 at FP8? then says so
    assert p.dist is not None or "无法部署" in p.table.value


def test_rate_panel_gpu_choice_keeps_the_rate_and_shows_the_change():
    """Moving the GPU dropdown once changed nothing visible: the rate was rescaled with the instance's
    compute ceiling, so every instance sat at the same share of its ceiling and the curves barely
    moved (H100 -> H200: the same FLOP/s, so the same rates and TTFT). The rate now stays put."""
    p = panel.rate_panel(background=False)
    h100 = p.dist
    assert "移动" in p.changed.value
    labels = [ln["label"] for plot in p.figure.plots for ln in plot["lines"]]
    assert "TPOT CDF (before)" not in labels                                 # nothing before the first run
    p.choices["gpu"].value = "h200"
    h200 = p.dist
    assert p.slider.value == 10 and h200.rate == h100.rate == 10            # the same traffic
    assert h200.stats["tpot_p99"] < h100.stats["tpot_p99"]                   # more bandwidth: shorter decode steps
    x_before, _ = plots.line_data(p.figure, "TPOT CDF (before)")
    x_now, _ = plots.line_data(p.figure, "TPOT CDF")
    assert np.array_equal(x_before, np.sort(h100.tpot)[np.unique(np.linspace(0, len(h100.tpot) - 1, 400).astype(int))] * 1e3)
    assert not np.array_equal(x_before, x_now)
    assert "GPU" in p.changed.value and "同样 10 req/s" in p.changed.value and "P99 TPOT" in p.changed.value
    assert "H200" in p.chart.value and "算力上限" in p.table.value
    p.choices["gpu"].value = "b200"                                         # about twice the FLOP/s
    b200 = p.dist
    assert b200.rate == 10 and b200.compute_ceiling > 1.8 * h100.compute_ceiling
    assert b200.load < 0.6 * h100.load and b200.stats["ttft_p99"] < h100.stats["ttft_p99"]
    assert 10 in p.slider.options and max(p.slider.options) > max(panel.RATE_OPTIONS)   # the B200's range
    p.choices["gpu"].value = "h100-sxm"
    assert p.slider.options == panel.RATE_OPTIONS and p.dist is h100        # back where it started


def test_rate_options_keep_the_shown_rate():
    b200 = panel.Hardware(gpu="b200")
    scaled = panel.rate_options(b200)
    assert 10 not in scaled and 10 in panel.rate_options(b200, keep=10)
    assert list(panel.rate_options(b200, keep=10)) == sorted(panel.rate_options(b200, keep=10))
    assert panel.rate_options(keep=16) == panel.RATE_OPTIONS


def test_rate_changed_line():
    a, b = panel.distribution(10), panel.distribution(18)
    line = panel.rate_changed(a, b, "rate")
    assert line.startswith("到达速率：10 → 18 req/s") and "17.9 req/s" in line and "100.0% →" in line
    assert "移动" in panel.rate_changed(None, a)


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
    assert e.decode_context == 2250
    assert e.decode_batch_compute_bound == 309          # the KV read moves it from 119 (weights only)
    assert explain.decode_crossover(panel.chapter_setup(), 0) == 119


@pytest.mark.parametrize("context", [0, 500, 2250, 3000])
def test_decode_crossover_is_where_step_time_turns_compute_bound(context):
    setup = panel.chapter_setup()
    b = int(explain.decode_crossover(setup, context))
    memory_only = lambda n: (setup.weight_bytes + setup.kv_bytes_per_token * n * context) / setup.bandwidth
    assert setup.step_time(b - 1, (b - 1) * context) == pytest.approx(memory_only(b - 1) + setup.step_overhead)
    assert setup.step_time(b, b * context) == pytest.approx(2 * setup.params * b / (setup.peak_flops * setup.mfu)
                                                            + setup.step_overhead)


def test_decode_crossover_is_infinite_when_kv_outgrows_the_flops():
    setup = panel.chapter_setup()
    assert explain.decode_crossover(setup, 3700) == math.inf       # each decoder reads more than it computes


def test_littles_law_holds_on_simulated_data():
    check = explain.littles_law(simulate(panel.chapter_setup(), 12, 3000, 2000, 500))
    assert check.mean_in_system == pytest.approx(check.predicted, rel=0.02)
    assert check.arrival_rate == pytest.approx(12, rel=0.05)


# --- The panel formats sim.plan; it computes nothing of its own --------------------------------

def test_the_panels_figures_are_whatever_sim_plan_says(monkeypatch):
    # A plan doctored after sim.plan returns it: a panel computing its own figures would not show it.
    import dataclasses
    from sim import bound, planning
    real = planning.plan

    def doctored(*args, **kwargs):
        p = real(*args, **kwargs)
        return dataclasses.replace(p, rate_per_instance=12.5, bound="max_num_seqs", low_load_ttft_s=0.0123,
                                   ceilings=bound.Ceilings(1.0, 2.0, 3.0))

    monkeypatch.setattr(planning, "plan", doctored)
    panel.clear_caches()
    try:
        d = panel.design(100, 1024, 256, 0.45)
        assert (d.rate_per_instance, d.bound, d.low_load_ttft_s) == (12.5, "max_num_seqs", 0.0123)
        assert (d.instances_no_headroom, d.instances, d.gpus) == (8, 11, 88)      # ceil(100 / 12.5 [x 1.3])
        assert d.usd_per_hour == 88 * 2.5 and tuple(d.ceilings) == (1.0, 2.0, 3.0)
        assert "12.5 req/s" in panel.design_html(d) and "并发上限" in panel.design_html(d)
    finally:
        panel.clear_caches()


def test_the_panel_says_ttft_where_sim_plan_does():
    hw = panel.Hardware("llama-3-8b", "h100-sxm", 1, "fp8", "fp8")
    d = panel.design(20, 16384, 64, 0.4, 2.5, hw, 1.0, 0.05)
    p = plan(20, panel.instance_setup(hw, 0.4), 16384, 64, 1.0, 0.05, gpus_per_instance=1)
    assert p.bound == d.bound == "ttft" and d.rate_per_instance == p.rate_per_instance
    assert "TTFT SLO" in panel.design_html(d) and any("TTFT SLO" in line for line in d.explanation)


def test_qps_and_price_resize_the_plan_without_a_new_search():
    panel.clear_caches()
    panel.design(200, 2000, 500, 0.4, 2.5)
    searches = panel.instance.cache_info().misses
    d = panel.design(750, 2000, 500, 0.4, 4.0)
    assert panel.instance.cache_info().misses == searches
    p = plan(750, panel.chapter_setup(), 2000, 500, 2.0, 0.05, gpus_per_instance=8, gpu_hour_usd=4.0)
    assert (d.instances, d.gpus, d.usd_per_hour) == (p.instances, p.gpus, p.usd_per_hour)
    assert d.plan == p


def test_infeasible_reasons_use_sim_plans_lone_request():
    from sim import InfeasibleError
    with pytest.raises(InfeasibleError) as info:
        plan(200, panel.chapter_setup(0.1), 32768, 4096, 2.0, 0.05, gpus_per_instance=8)
    d = panel.design(200, 32768, 4096, 0.1)
    assert (d.low_load_ttft_s, d.low_load_tpot_s) == (info.value.ttft_s, info.value.tpot_s)
    assert f"{info.value.ttft_s:.2f} s" in d.reason


def test_the_kv_fit_rule_is_sim_validates_paged_kv_included(monkeypatch):
    # The panel asks sim.validate.check_lengths_fit (the rule sim.plan applies), not its own sum: a
    # request of exactly kv_capacity_tokens fits the whole-reservation rule, but not paged KV's
    # whole blocks (3,084,716 tokens is not a multiple of 16).
    from sim.kv import Paged
    from sim.validate import check_lengths_fit
    paged = panel.chapter_setup().replace(kv=Paged(block_size=16))
    need = paged.kv_capacity_tokens
    assert need % 16 and panel._setup_or_reason(panel.CHAPTER, 0.4, need - 500, 500) == (panel.chapter_setup(), "")
    monkeypatch.setattr(panel, "instance_setup", lambda hw, mfu: paged)
    _, why = panel._setup_or_reason(panel.CHAPTER, 0.4, need - 500, 500)
    with pytest.raises(ValueError) as rule:
        check_lengths_fit(paged, need - 500, 500)
    assert "KV Cache" in why and str(rule.value) in why
    assert panel._setup_or_reason(panel.CHAPTER, 0.4, 2000, 500) == (paged, "")


def test_the_panels_name_the_instance_as_the_commands_do():
    hw = panel.Hardware("llama-3-8b", "h200", 2, "fp8", "bf16")
    assert hw.label() == presets.describe("llama-3-8b", "h200", 2, "fp8", "bf16") == \
        "Llama-3-8B on 2 x H200 SXM, weights FP8 / KV BF16"
    p = panel.design_panel(background=False)
    assert panel.CHAPTER.label() in p.chart.value


def test_bench_panel_times_every_chapters_panel():
    """benchmarks/bench_panel.py's registry names the panel every notebook builds (a new chapter's
    panel is one line there)."""
    import importlib.util
    import re
    from pathlib import Path

    import nbformat
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("bench_panel", root / "benchmarks" / "bench_panel.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    built = {}
    for path in sorted((root / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                for module, factory in re.findall(r"^(\w+)\.(\w+_panel)\(", cell.source, re.M):
                    built[path.name[:2]] = factory
    assert built, "no notebook builds a panel"
    for chapter, factory in built.items():
        assert chapter in bench.PANELS, f"chapter {chapter}'s {factory}() is not in bench_panel.PANELS"
        assert bench.PANELS[chapter][1] == factory


def test_bench_panel_moves_every_control_of_a_panel():
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("bench_panel", root / "benchmarks" / "bench_panel.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = panel.rate_panel(background=False)
    assert set(r.controls) == {"rate", "model", "gpu", "tp", "weight_dtype", "kv_dtype"}
    assert bench.values_of(r.controls["gpu"]) == list(panel.GPU_OPTIONS)
    assert bench.spread(list(range(10)), 3) == [0, 4, 9] and bench.spread([1, 2], 5) == [1, 2]


# --- Off the shipped table: a marked estimate first, then sim.plan's figures --------------------

OFF_TABLE = dict(input_len=4096, output_len=1024, mfu=0.3)      # three sliders moved: not in the table


def test_quick_rate_is_the_capacity_search_with_shorter_trials():
    setup = panel.chapter_setup(0.3)
    rate, runs = capacity.search(setup, 4096, 1024, 2.0, 0.05, windows=estimate.quick_windows(setup, 4096, 1024, 2.0, 0.05),
                                 rel_tol=estimate.QUICK_REL_TOL)
    assert estimate.quick_rate(4096, 1024, 0.3) == rate > 0
    assert all(n < capacity.steady_trial(setup, 4096, 1024, 2.0, 0.05, r)[0] for r, n in runs.lengths.items())
    assert estimate.quick_rate(32768, 4096, 0.1) is None                   # a lone request misses the TTFT SLO
    assert estimate.quick_rate(2000, 500, 0.4, panel.Hardware(gpu="a100-80gb")) is None     # no FP8 on an A100


def test_the_estimate_is_sized_as_sim_plan_sizes_a_rate_and_says_it_is_one():
    d = estimate.estimated_design(300, 4096, 1024, 0.3, 3.0)
    rate = estimate.quick_rate(4096, 1024, 0.3)
    sized = planning.size(300, rate, 1024, gpus_per_instance=8, headroom=1.3, gpu_hour_usd=3.0)
    assert d.estimated and d.rate_per_instance == rate and d.bound == "estimating"
    assert (d.instances_no_headroom, d.instances, d.gpus, d.usd_per_hour) == sized[:4]
    text = panel.design_html(d)
    assert "估算" in text and f"约 {explain.fmt_rate(rate)} req/s" in text and f"约 {d.gpus} 张" in text
    assert "计算中" in text and not panel.design(300, 4096, 1024, 0.3, 3.0).estimated


def test_ready_says_whether_a_position_needs_a_search():
    panel.clear_caches()
    assert not panel.ready(**OFF_TABLE)
    assert panel.ready(2000, 500, 0.4, panel.Hardware(gpu="a100-80gb"))   # cannot run: the reason is the answer
    panel.design(200, **OFF_TABLE)
    assert panel.ready(**OFF_TABLE)
    if panel.instance.table.current():                                   # the shipped table: the chapter's position
        assert panel.ready(2000, 500, 0.4)


def test_an_off_table_move_shows_a_marked_estimate_then_sim_plans_figures():
    p = panel.design_panel(background=False)
    p.sliders["input_len"].value, p.sliders["output_len"].value = 4096, 1024
    panel.clear_caches()
    shown = []
    p.table.observe(lambda c: shown.append(c["new"]), names="value")
    p.sliders["mfu"].value = 0.3
    assert len(shown) == 2 and "估算" in shown[0] and "估算" not in shown[1]
    assert p.estimate.rate_per_instance == estimate.quick_rate(**OFF_TABLE)
    assert p.design == panel.design(200, **OFF_TABLE) and not p.design.estimated
    assert shown[1] == p.table.value == panel.design_html(p.design)
    assert 0 < p.first_s < p.answer_s <= p.last_update_s and "估算" in p.status.value
    p.sliders["qps"].value = 300                                         # a resize: no estimate, no search
    assert len(shown) == 3 and "估算" not in shown[2] and p.first_s == p.answer_s


def test_a_stage_of_an_older_move_shows_nothing(monkeypatch):
    p = panel.design_panel(background=False)
    before = (p.table.value, p.changed.value, p.busy.value, p.design)
    monkeypatch.setattr(panel, "ready", lambda *args: False)            # so the estimate is computed too
    assert p.first("mfu", current=lambda: False) is False
    assert p.rest("mfu", current=lambda: False) is False
    assert (p.table.value, p.changed.value, p.busy.value, p.design) == before


def test_a_search_stops_once_its_position_is_no_longer_wanted(monkeypatch):
    # design -> instance -> sim.plan -> the capacity search, asked between slices of each run
    panel.clear_caches()
    asked = []
    real = planning.plan

    def watched(*args, **kwargs):
        asked.append(kwargs["stop"])
        return real(*args, **kwargs)

    monkeypatch.setattr(planning, "plan", watched)
    checks = iter(range(10**6))
    with pytest.raises(capacity.Cancelled):
        panel.while_current(lambda: next(checks) < 5, panel.design, 200, *OFF_TABLE.values())
    assert asked and asked[0] is not None and not panel.ready(**OFF_TABLE)     # nothing kept
    with pytest.raises(capacity.Cancelled):
        panel.while_current(lambda: False, estimate.quick_rate, *OFF_TABLE.values())
    assert estimate.quick_rate.cache_info().currsize == 0
    assert panel._STOP.get() is None                                   # reset after each call
    d = panel.while_current(lambda: True, panel.design, 200, *OFF_TABLE.values())
    assert d == panel.design(200, **OFF_TABLE) and panel.ready(**OFF_TABLE)


def test_background_moves_end_on_the_latest_and_a_resize_keeps_the_search(monkeypatch):
    panel.clear_caches()
    p = panel.design_panel(background=True)
    p.sliders["mfu"].value = 0.3
    p.sliders["input_len"].value = 4096
    p.wait()
    stops = []
    real = panel.while_current
    monkeypatch.setattr("course.live.while_current",
                        lambda wanted, f, *args: stops.append(wanted) or real(wanted, f, *args))
    p.sliders["output_len"].value = 1024        # three sliders moved: off the table, a search starts
    p.sliders["qps"].value = 300                # the same search wanted: it is kept
    p.wait()
    assert p.design == panel.design(300, 4096, 1024, 0.3) and p.busy.value == ""
    assert stops and all(w() for w in stops)    # every search still wanted at the end
    p.sliders["output_len"].value = 2048        # another search: the one for 1024 is no longer wanted
    assert not stops[0]()
    p.wait()
    assert p.design == panel.design(300, 4096, 2048, 0.3) and p.superseded >= 1


def test_quick_trials_shrink_where_a_window_holds_many_requests():
    setup = panel.chapter_setup(0.8)
    assert estimate.quick_windows(panel.chapter_setup(), 2000, 500, 2.0, 0.05) == estimate.QUICK_WINDOWS
    short = estimate.quick_windows(setup, 128, 64, 10.0, 0.1)          # a 16 s window at ~1000 req/s
    ceiling = capacity.throughput_bound(setup, 128, 64)
    window = capacity.steady_trial(setup, 128, 64, 10.0, 0.1, ceiling)[1]
    assert short == max(3, int(estimate.QUICK_MAX_REQUESTS // (window * ceiling))) < estimate.QUICK_WINDOWS
    assert estimate.quick_windows(setup, 128, 64, 1e4, 1.0) == 3                       # never below 3
