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
    """(x, y) of the first line labelled ``label`` on any axes of ``fig`` (a Figure or a ``Chart``);
    KeyError if none."""
    if isinstance(fig, Chart):
        return fig.line_data(label)
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_label() == label:
                return np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
    raise KeyError(f"no line labelled {label!r}; have {labels(fig)}")


def labels(fig: Figure) -> list[str]:
    """Labels of every line in ``fig``."""
    if isinstance(fig, Chart):
        return fig.labels()
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


# --- Light charts for the live panels ---------------------------------------------------------
# A matplotlib PNG takes 100-300 ms to render, longer than a slider may take in total. The panels
# draw their two small charts as SVG text instead (well under a millisecond), shown in an HTML
# widget: the browser renders it, and the notebook's saved widget state keeps it, so the chart shows
# on open. ``Chart`` keeps each line's data, so ``line_data(chart, label)`` works as on a Figure.

class Chart:
    """Side-by-side plots drawn as one SVG. ``add(i, label, x, y, ...)`` adds a line to plot i;
    ``hline`` / ``vline`` add reference lines (kept as two-point lines, for ``line_data``)."""

    def __init__(self, n: int = 2, *, width: int = 760, height: int = 250, title: str = ""):
        self.width, self.height, self.title = width, height, title
        self.plots = [dict(lines=[], xlabel="", ylabel="", logx=False, logy=False, ylim=None, xlim=None)
                      for _ in range(n)]

    def add(self, i, label, x, y, *, color, dash="", marker=True, step=False):
        self.plots[i]["lines"].append(dict(label=label, x=np.asarray(x, float), y=np.asarray(y, float),
                                           color=color, dash=dash, marker=marker, step=step, span=None))

    def hline(self, i, label, y, *, color, dash="4 3"):
        self.plots[i]["lines"].append(dict(label=label, x=None, y=np.array([y, y], float), color=color,
                                           dash=dash, marker=False, step=False, span="h"))

    def vline(self, i, label, x, *, color, dash="6 3"):
        self.plots[i]["lines"].append(dict(label=label, x=np.array([x, x], float), y=None, color=color,
                                           dash=dash, marker=False, step=False, span="v"))

    def axes(self, i, **kw):
        self.plots[i].update(kw)

    def line_data(self, label):
        for p in self.plots:
            for ln in p["lines"]:
                if ln["label"] == label:
                    lo, hi = _limits(p)
                    x = ln["x"] if ln["x"] is not None else np.array([lo[0], hi[0]])
                    y = ln["y"] if ln["y"] is not None else np.array([lo[1], hi[1]])
                    return np.asarray(x, float), np.asarray(y, float)
        raise KeyError(f"no line labelled {label!r}; have {self.labels()}")

    def labels(self):
        return [ln["label"] for p in self.plots for ln in p["lines"]]

    def svg(self) -> str:
        n = len(self.plots)
        top = 22 if self.title else 8
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
               f'font-family="sans-serif" font-size="11">',
               '<rect width="100%" height="100%" fill="white"/>']
        if self.title:
            out.append(f'<text x="{self.width / 2:.0f}" y="15" text-anchor="middle" font-size="12">'
                       f'{_esc(self.title)}</text>')
        cell = self.width / n
        for i, p in enumerate(self.plots):
            left, right, bottom = i * cell + 52, (i + 1) * cell - 12, self.height - 34
            out += _plot_svg(p, left, right, top, bottom)
        out.append("</svg>")
        return "".join(out)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _limits(p):
    xs = [ln["x"] for ln in p["lines"] if ln["x"] is not None and ln["span"] is None]
    ys = [ln["y"] for ln in p["lines"] if ln["y"] is not None]
    xs += [ln["x"] for ln in p["lines"] if ln["span"] == "v"]
    x = np.concatenate(xs) if xs else np.array([0.0, 1.0])
    y = np.concatenate(ys) if ys else np.array([0.0, 1.0])
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if p["logx"]:
        x = x[x > 0]
    if p["logy"]:
        y = y[y > 0]
    x0, x1 = (float(x.min()), float(x.max())) if len(x) else (0.0, 1.0)
    y0, y1 = (float(y.min()), float(y.max())) if len(y) else (0.0, 1.0)
    if p["xlim"]:
        x0, x1 = p["xlim"]
    if p["ylim"]:
        y0, y1 = p["ylim"]
    elif not p["logy"]:
        y0, y1 = min(0.0, y0), y1 * 1.08 if y1 > 0 else 1.0
    if p["logy"]:
        y0, y1 = y0 / 1.5, y1 * 1.5
    if p["logx"]:
        x0, x1 = x0 / 1.2, x1 * 1.2
    else:
        pad = (x1 - x0) * 0.04 or max(abs(x0) * 0.1, 1.0)
        x0, x1 = x0 - pad, x1 + pad
    return (x0, y0), (x1, y1)


def _ticks(lo, hi, log):
    if log:
        out = []
        for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
            out += [m * 10.0 ** e for m in (1, 2, 5)]
        ticks = [t for t in out if lo <= t <= hi]
        return ticks if len(ticks) <= 8 else [t for t in ticks if round(t / 10 ** np.floor(np.log10(t))) == 1]
    step = 10 ** np.floor(np.log10((hi - lo) / 4 or 1))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (m * step) <= 6:
            step *= m
            break
    return list(np.arange(np.ceil(lo / step) * step, hi + step * 1e-9, step))


def _plot_svg(p, left, right, top, bottom):
    (x0, y0), (x1, y1) = _limits(p)
    fx = (lambda v: np.log10(v)) if p["logx"] else (lambda v: v)
    fy = (lambda v: np.log10(v)) if p["logy"] else (lambda v: v)
    X0, X1, Y0, Y1 = fx(x0), fx(x1), fy(y0), fy(y1)
    sx = lambda v: left + (fx(v) - X0) / ((X1 - X0) or 1) * (right - left)         # noqa: E731
    sy = lambda v: bottom - (fy(v) - Y0) / ((Y1 - Y0) or 1) * (bottom - top)       # noqa: E731
    out = [f'<rect x="{left:.1f}" y="{top}" width="{right - left:.1f}" height="{bottom - top}" '
           f'fill="none" stroke="#888"/>']
    for t in _ticks(x0, x1, p["logx"]):
        X = sx(t)
        out.append(f'<line x1="{X:.1f}" y1="{top}" x2="{X:.1f}" y2="{bottom}" stroke="#eee"/>'
                   f'<text x="{X:.1f}" y="{bottom + 13}" text-anchor="middle">{t + 0.0:g}</text>')
    for t in _ticks(y0, y1, p["logy"]):
        Y = sy(t)
        out.append(f'<line x1="{left:.1f}" y1="{Y:.1f}" x2="{right:.1f}" y2="{Y:.1f}" stroke="#eee"/>'
                   f'<text x="{left - 4:.1f}" y="{Y + 4:.1f}" text-anchor="end">{t + 0.0:g}</text>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 27}" text-anchor="middle">{_esc(p["xlabel"])}</text>')
    out.append(f'<text transform="translate({left - 40:.1f},{(top + bottom) / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{_esc(p["ylabel"])}</text>')
    legend = []
    for ln in p["lines"]:
        color, dash = ln["color"], f' stroke-dasharray="{ln["dash"]}"' if ln["dash"] else ""
        if ln["span"] == "h":
            if not y0 <= ln["y"][0] <= y1:
                continue
            Y = sy(ln["y"][0])
            out.append(f'<line x1="{left:.1f}" y1="{Y:.1f}" x2="{right:.1f}" y2="{Y:.1f}" stroke="{color}"{dash}/>')
        elif ln["span"] == "v":
            X = sx(ln["x"][0])
            out.append(f'<line x1="{X:.1f}" y1="{top}" x2="{X:.1f}" y2="{bottom}" stroke="{color}"{dash}/>')
        else:
            keep = np.isfinite(ln["x"]) & np.isfinite(ln["y"])
            if p["logx"]:
                keep &= ln["x"] > 0
            if p["logy"]:
                keep &= ln["y"] > 0
            xs = [sx(v) for v in ln["x"][keep]]
            ys = [min(max(sy(v), top), bottom) for v in ln["y"][keep]]
            if ln["step"]:
                pts = [f"{a:.1f},{b:.1f}" for k, (a, b) in enumerate(zip(xs, ys))
                       for a, b in ((a, ys[k - 1] if k else b), (a, b))]
            else:
                pts = [f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys)]
            out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>')
            if ln["marker"]:
                out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2.6" fill="{color}"/>' for a, b in zip(xs, ys)]
        legend.append((ln["label"], color, dash))
    for k, (label, color, dash) in enumerate(legend):
        Y = top + 12 + 13 * k
        out.append(f'<line x1="{left + 6:.1f}" y1="{Y - 4}" x2="{left + 24:.1f}" y2="{Y - 4}" stroke="{color}" '
                   f'stroke-width="1.6"{dash}/><text x="{left + 28:.1f}" y="{Y}">{_esc(label)}</text>')
    return out


_COLORS = {TTFT_COLOR: "#1f77b4", TPOT_COLOR: "#ff7f0e", SLO_COLOR: "#d62728", RATE_COLOR: "#2ca02c"}


def latency_vs_rate_chart(curve, ttft_slo: float, tpot_slo: float, chosen_rate: float | None = None,
                          *, title: str = "") -> Chart:
    """``latency_vs_rate_figure`` as a light ``Chart`` (same lines, same labels)."""
    c = Chart(2, title=title)
    rates = np.asarray(curve.rates, dtype=float)
    c.add(0, "p99 TTFT", rates, np.asarray(curve.ttft_p99) * 1e3, color=_COLORS[TTFT_COLOR])
    c.add(1, "p99 TPOT", rates, np.asarray(curve.tpot_p99) * 1e3, color=_COLORS[TPOT_COLOR])
    c.hline(0, "TTFT SLO", ttft_slo * 1e3, color=_COLORS[SLO_COLOR])
    c.hline(1, "TPOT SLO", tpot_slo * 1e3, color=_COLORS[SLO_COLOR])
    for i in (0, 1):
        if chosen_rate:
            c.vline(i, "chosen rate", chosen_rate, color=_COLORS[RATE_COLOR])
    c.axes(0, logy=True, xlabel="offered rate per instance (req/s)", ylabel="TTFT (ms, log scale)")
    tp = np.asarray(curve.tpot_p99, dtype=float)
    top = max(tpot_slo * 1e3 * 1.6, float(np.nanmax(tp)) * 1e3 * 1.1) if np.isfinite(tp).any() else tpot_slo * 1.6e3
    c.axes(1, xlabel="offered rate per instance (req/s)", ylabel="TPOT (ms)", ylim=(0, top))
    return c


BEFORE_COLOR = "#9a9a9a"      # the previous run's CDFs, drawn under the current ones


def _cdf(values, points: int = 400):
    x = np.sort(np.asarray(values, dtype=float)) * 1e3
    y = np.arange(1, len(x) + 1) / len(x)
    pick = np.unique(np.linspace(0, len(x) - 1, min(len(x), points)).astype(int))
    return x[pick], y[pick]


def distribution_chart(ttft, tpot, ttft_slo: float, tpot_slo: float, *, title: str = "",
                       before=None) -> Chart:
    """``distribution_figure`` as a light ``Chart``: the CDFs (at most 400 points each), the SLOs.
    ``before``: (ttft, tpot) of the previous run, drawn dashed in grey ("TTFT CDF (before)") so a
    move that shifts the curves only a little still shows where they were."""
    c = Chart(2, title=title)
    for i, values, slo, name, color in ((0, ttft, ttft_slo, "TTFT", TTFT_COLOR), (1, tpot, tpot_slo, "TPOT", TPOT_COLOR)):
        if before is not None:
            c.add(i, f"{name} CDF (before)", *_cdf(before[i]), color=BEFORE_COLOR, dash="4 3", marker=False, step=True)
        c.add(i, f"{name} CDF", *_cdf(values), color=_COLORS[color], marker=False, step=True)
        c.vline(i, f"{name} SLO", slo * 1e3, color=_COLORS[SLO_COLOR])
        c.axes(i, logx=True, xlabel=f"{name} (ms, log scale)", ylabel="fraction of requests", ylim=(0, 1.02))
    return c
