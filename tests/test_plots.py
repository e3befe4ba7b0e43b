"""The figures carry the data they are given, labelled so that tests and readers can find it."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from course import panel, plots
from sim import simulate
from sim.workload import Workload, run


@pytest.fixture(scope="module")
def curve():
    return panel.latency_curve_for(panel.chapter_setup(), [4, 12, 17, 20], 2000, 500, num_requests=1000)


def test_latency_vs_rate_plots_the_curve_in_ms(curve):
    fig = plots.latency_vs_rate_figure(curve, 2.0, 0.05, chosen_rate=16.8, show_p50=True)
    for label, values in (("p99 TTFT", curve.ttft_p99), ("p99 TPOT", curve.tpot_p99),
                          ("p50 TTFT", curve.ttft_p50), ("p50 TPOT", curve.tpot_p50)):
        x, y = plots.line_data(fig, label)
        assert np.array_equal(x, curve.rates) and np.allclose(y, values * 1e3), label
    assert plots.line_data(fig, "TTFT SLO")[1][0] == 2000
    assert plots.line_data(fig, "TPOT SLO")[1][0] == 50
    assert plots.line_data(fig, "chosen rate")[0][0] == 16.8
    assert plots.labels(fig).count("chosen rate") == 2
    assert fig.axes[0].get_yscale() == "log"


def test_latency_vs_rate_without_a_chosen_rate(curve):
    fig = plots.latency_vs_rate_figure(curve, 2.0, 0.05)
    assert "chosen rate" not in plots.labels(fig) and "p50 TTFT" not in plots.labels(fig)
    with pytest.raises(KeyError):
        plots.line_data(fig, "chosen rate")


def test_knee_is_visible_in_the_curve(curve):
    assert curve.ttft_p99[-1] > 5 * curve.ttft_p99[0]
    assert curve.tpot_p99[-1] > 0.05 > curve.tpot_p99[0]


def test_distribution_figure_is_an_empirical_cdf():
    result = simulate(panel.chapter_setup(), 10, 200, 2000, 500)
    fig = plots.distribution_figure(result.ttft, result.tpot, 2.0, 0.05, title="t")
    for name, values in (("TTFT", result.ttft), ("TPOT", result.tpot)):
        x, y = plots.line_data(fig, f"{name} CDF")
        assert np.allclose(x, np.sort(values) * 1e3)
        assert y[0] == pytest.approx(1 / 200) and y[-1] == 1.0 and np.all(np.diff(y) > 0)
        mx, my = plots.line_data(fig, f"{name} p50/p99")
        assert list(my) == [0.5, 0.99] and mx[0] <= mx[1]


def test_timeline_draws_every_step_and_request():
    demo = panel.chapter_setup().replace(max_num_batched_tokens=2048)
    result = run(demo, Workload("demo", (0.0, 0.01, 0.03), (3000, 1000, 500), (5, 4, 6)))
    fig = plots.timeline_figure(result)
    ax_steps, ax_req = fig.axes
    assert len(ax_steps.patches) == len(result.steps)
    heights = sorted(p.get_height() for p in ax_steps.patches)
    assert heights == sorted(result.steps.tokens.tolist())
    assert len(ax_req.patches) == 2 * len(result)
    x, _ = plots.line_data(fig, "arrival")
    assert np.allclose(x, result.arrival * 1e3)


def test_concurrency_figure_lines():
    fig = plots.concurrency_figure([0, 1, 2], [1, 2, 1], 1.5, 1.4)
    assert plots.line_data(fig, "time average")[1][0] == 1.5
    assert plots.line_data(fig, "Little: throughput x mean latency")[1][0] == 1.4


def test_figures_render_to_png(curve):
    png = panel.figure_png(plots.latency_vs_rate_figure(curve, 2.0, 0.05, 16.8))
    assert png.startswith(b"\x89PNG")
