"""Matplotlib figures for the chapter notebooks.

Every function returns a ``matplotlib.figure.Figure`` built without pyplot (so nothing is shown or
kept alive behind the caller's back: a notebook displays it by ending a cell with it, a panel renders
it to PNG). Lines carry a ``label`` so tests can find their data: ``line_data(fig, label)``.
Labels are in English: the course's machines need not have a CJK font, and the prose is in the
notebook's markdown anyway.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

TTFT_COLOR, TPOT_COLOR, SLO_COLOR, RATE_COLOR = "tab:blue", "tab:orange", "tab:red", "tab:green"


def line_data(fig: Figure, label: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the first line labelled ``label`` on any axes of ``fig``; KeyError if none."""
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_label() == label:
                return np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
    raise KeyError(f"no line labelled {label!r}; have {labels(fig)}")


def labels(fig: Figure) -> list[str]:
    """Labels of every line in ``fig``."""
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()]


def _plain_log(axis) -> None:
    """Log-scale tick labels as plain numbers (50, 100, 2000), minor ones only at 2x and 5x."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))

    def minor(v, _):
        lead = v / 10 ** np.floor(np.log10(v)) if v > 0 else 0
        return f"{v:g}" if round(lead) in (2, 5) else ""
    axis.set_minor_formatter(FuncFormatter(minor))


def latency_vs_rate_figure(curve, ttft_slo: float, tpot_slo: float, chosen_rate: float | None = None,
                           *, show_p50: bool = False, title: str | None = None) -> Figure:
    """p99 TTFT (log scale) and p99 TPOT against the offered rate, with the SLOs and the chosen rate.

    ``curve`` is a ``course.panel.LatencyCurve``. Lines: "p99 TTFT", "p99 TPOT", "TTFT SLO", "TPOT SLO",
    "chosen rate" (when given; drawn on both axes), and "p50 TTFT" / "p50 TPOT" with ``show_p50``.
    """
    fig = Figure(figsize=(9, 3.4))
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.15, top=0.9 if title else 0.96, wspace=0.22)
    ax_ttft, ax_tpot = fig.subplots(1, 2)
    rates = np.asarray(curve.rates, dtype=float)
    ax_ttft.plot(rates, np.asarray(curve.ttft_p99) * 1e3, "o-", color=TTFT_COLOR, label="p99 TTFT")
    ax_tpot.plot(rates, np.asarray(curve.tpot_p99) * 1e3, "o-", color=TPOT_COLOR, label="p99 TPOT")
    if show_p50:
        ax_ttft.plot(rates, np.asarray(curve.ttft_p50) * 1e3, "s--", color=TTFT_COLOR, alpha=0.6, label="p50 TTFT")
        ax_tpot.plot(rates, np.asarray(curve.tpot_p50) * 1e3, "s--", color=TPOT_COLOR, alpha=0.6, label="p50 TPOT")
    ax_ttft.axhline(ttft_slo * 1e3, color=SLO_COLOR, ls=":", label="TTFT SLO")
    ax_tpot.axhline(tpot_slo * 1e3, color=SLO_COLOR, ls=":", label="TPOT SLO")
    for ax in (ax_ttft, ax_tpot):
        if chosen_rate:
            ax.axvline(chosen_rate, color=RATE_COLOR, ls="--", label="chosen rate")
        ax.set_xlabel("offered rate per instance (req/s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    ax_ttft.set_yscale("log")
    _plain_log(ax_ttft.yaxis)
    ax_ttft.set_ylabel("TTFT (ms, log scale)")
    ax_tpot.set_ylabel("TPOT (ms)")
    ax_tpot.set_ylim(0, max(tpot_slo * 1e3 * 1.6, float(np.nanmax(np.asarray(curve.tpot_p99))) * 1e3 * 1.1))
    if title:
        fig.suptitle(title)
    return fig


def distribution_figure(ttft, tpot, ttft_slo: float, tpot_slo: float, *, title: str | None = None) -> Figure:
    """Empirical CDFs of per-request TTFT and TPOT (ms), with the SLOs and the p50 / p99 marked.

    Lines: "TTFT CDF", "TPOT CDF" (x: sorted values in ms, y: fraction of requests at or below),
    "TTFT SLO", "TPOT SLO", and the markers "TTFT p50/p99", "TPOT p50/p99".
    """
    fig = Figure(figsize=(9, 3.2))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.88 if title else 0.96, wspace=0.2)
    axes = fig.subplots(1, 2)
    for ax, values, slo, name, color in ((axes[0], ttft, ttft_slo, "TTFT", TTFT_COLOR),
                                         (axes[1], tpot, tpot_slo, "TPOT", TPOT_COLOR)):
        x = np.sort(np.asarray(values, dtype=float)) * 1e3
        y = np.arange(1, len(x) + 1) / len(x)
        ax.plot(x, y, color=color, drawstyle="steps-post", label=f"{name} CDF")
        ax.axvline(slo * 1e3, color=SLO_COLOR, ls=":", label=f"{name} SLO")
        marks = [x[min(len(x) - 1, int(np.ceil(p * len(x))) - 1)] for p in (0.5, 0.99)]
        ax.plot(marks, [0.5, 0.99], "kv", label=f"{name} p50/p99")
        ax.set_xscale("log")
        _plain_log(ax.xaxis)
        ax.set_xlabel(f"{name} (ms, log scale)")
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def timeline_figure(result, *, names=None, title: str | None = None) -> Figure:
    """One instance's steps (top) and each request's life (bottom), on a shared time axis in ms.

    Top: one bar per step, as wide as the step and as tall as the tokens it computed; hatched when it
    carried prompt tokens. Bottom: per request, arrival to first token (waiting + prefill) and first
    token to finish (decode). Lines "arrival" mark arrivals; bars carry labels "step", "prefill
    step", "waiting + prefill" and "decode" (the first of each).
    """
    steps = result.steps
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax_steps, ax_req = fig.subplots(2, 1, sharex=True, height_ratios=[1, 1.4])
    start, dur = steps.start * 1e3, steps.duration * 1e3
    prefill = steps.tokens > steps.decoders
    ax_steps.bar(start[~prefill], steps.tokens[~prefill], width=dur[~prefill], align="edge",
                 color="tab:gray", edgecolor="white", linewidth=0.3, label="decode-only step")
    ax_steps.bar(start[prefill], steps.tokens[prefill], width=dur[prefill], align="edge",
                 color="tab:purple", edgecolor="white", linewidth=0.3, hatch="//", label="step with prompt tokens")
    ax_steps.set_yscale("log")
    ax_steps.set_ylabel("tokens in step")
    ax_steps.legend(fontsize=8, loc="upper right")
    ax_steps.grid(alpha=0.3, axis="y")
    n = len(result)
    names = list(names) if names is not None else [f"req {i}" for i in range(n)]
    arrival, first, finish = result.arrival * 1e3, result.first_token * 1e3, result.finish * 1e3
    for i in range(n):
        ax_req.barh(i, first[i] - arrival[i], left=arrival[i], color=TTFT_COLOR, height=0.5,
                    label="waiting + prefill (TTFT)" if i == 0 else "_nolegend_")
        ax_req.barh(i, finish[i] - first[i], left=first[i], color=TPOT_COLOR, height=0.5,
                    label="decode" if i == 0 else "_nolegend_")
    ax_req.plot(arrival, np.arange(n), "k|", markersize=14, label="arrival")
    ax_req.set_yticks(range(n), names)
    ax_req.invert_yaxis()
    ax_req.set_xlabel("time (ms)")
    ax_req.legend(fontsize=8, loc="lower right")
    ax_req.grid(alpha=0.3, axis="x")
    if title:
        fig.suptitle(title)
    return fig


def concurrency_figure(times, in_system, mean_measured: float, mean_little: float,
                       *, title: str | None = None) -> Figure:
    """Requests in the system over time, its time average, and Little's law's prediction.

    Lines: "in system", "time average", "Little: throughput x mean latency".
    """
    fig = Figure(figsize=(9, 2.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(times, in_system, color="tab:gray", lw=0.8, drawstyle="steps-post", label="in system")
    ax.axhline(mean_measured, color=TTFT_COLOR, label="time average")
    ax.axhline(mean_little, color=SLO_COLOR, ls="--", label="Little: throughput x mean latency")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("requests in system")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    if title:
        fig.suptitle(title)
    return fig
