"""Interactive panels for the chapter notebooks: pure computations, and the widgets that drive them.

Two panels:

* ``design_panel()`` (chapter 02): sliders for QPS, prompt length, output length, MFU and GPU price
  over the chapter's 70B instance; shows the sizing (``sim.plan``), the hand calculation behind
  it (``course.explain``) and p99 TTFT / TPOT against the per-instance rate.
* ``rate_panel()`` (chapter 01): a slider over the offered rate; shows how the TTFT and TPOT
  distributions of one instance move.

The numbers come from functions with no widgets in them (``design``, ``latency_curve``,
``distribution``), cached on their arguments, so a slider change only recomputes what it changed:
QPS and price never rerun the simulator, and a prompt/output/MFU combination already seen comes back
at once. Sliders use ``continuous_update=False``: the panel recomputes when the slider is released.
Speed: the rate search (``sim.max_rate`` on 1500 requests, as the chapter does) costs up
to ~1 s, so its results for every slider position are precomputed in ``course/panel_table.py``
(checked against a live run on first use); the latency curve (7 runs) is simulated live.
"""

from __future__ import annotations

import html
import io
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from course.explain import explain_zh, fmt_rate
from sim import planning
from sim.capacity import max_rate
from sim.metrics import meets_slos, percentile, summarize
from sim.setup import Setup
from sim.simulate import simulate

# The chapter's service: a 70B dense model, FP8 weights and KV, one instance = 8 x H100 with TP=8.
KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 1          # K and V x 80 layers x 8 KV heads x 128 dims x 1 byte
GPUS_PER_INSTANCE = 8
TTFT_SLO_S = 2.0
TPOT_SLO_S = 0.05
HEADROOM = 1.3
GPU_HOUR_USD = 2.5
QPS, INPUT_LEN, OUTPUT_LEN, MFU = 200, 2000, 500, 0.4

# Slider positions. Lengths are roughly log-spaced and include the chapter's 2000 and 500.
QPS_OPTIONS = (10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000)
INPUT_OPTIONS = (128, 256, 512, 1024, 2000, 4096, 8192, 16384, 32768)
OUTPUT_OPTIONS = (16, 32, 64, 128, 256, 500, 1024, 2048, 4096)
MFU_RANGE = (0.1, 0.8, 0.05)
PRICE_RANGE = (0.5, 8.0, 0.25)

# The interactive curve uses the search's 1500 requests per point: shorter runs never reach a steady
# state at long outputs (a 500-token answer lasts ~10 s at high load) and would draw tails far below
# the ones the search judged, so the marked rate would not sit where the curve meets the SLO line.
# Seven points keep a cold update under ~0.5 s.
CURVE_REQUESTS = 1500
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25)   # of the chosen rate


def chapter_setup(mfu: float = MFU) -> Setup:
    """The chapter's instance: 70.6B params, FP8, 8 x H100 (80 GB, 3.35 TB/s, 1979 TFLOP/s FP8)."""
    return Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=KV_BYTES_PER_TOKEN,
                 kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / KV_BYTES_PER_TOKEN),
                 peak_flops=8 * 1979e12, bandwidth=8 * 3.35e12, mfu=mfu, step_overhead=1.5e-3,
                 max_num_batched_tokens=8192, max_num_seqs=512)


# --- Pure computations -------------------------------------------------------------------------

@dataclass(frozen=True)
class Design:
    """What the chapter-02 panel shows for one position of its sliders: ``sim.plan``'s figures.

    When no rate meets the SLOs ``feasible`` is False, the counts and costs are None, ``bound`` is
    "infeasible", ``reason`` says why and the low-load times are those of a lone request.
    ``explanation`` holds the hand calculation behind the numbers, in Chinese.
    """

    qps: float
    input_len: int
    output_len: int
    mfu: float
    gpu_hour_usd: float
    feasible: bool
    rate_per_instance: float
    instances_no_headroom: int | None
    instances: int | None
    gpus: int | None
    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None
    bound: str
    low_load_ttft_s: float
    low_load_tpot_s: float
    reason: str
    explanation: tuple


@lru_cache(maxsize=None)
def _mfu_setup(mfu: float) -> Setup:
    return chapter_setup(mfu)


@lru_cache(maxsize=512)
def lone_request(input_len: int, output_len: int, mfu: float) -> tuple[float, float]:
    """(TTFT, TPOT) of one request alone on the instance: the best the instance can ever do."""
    result = simulate(_mfu_setup(mfu), 1.0, 1, input_len, output_len)
    return float(result.ttft[0]), float(result.tpot[0])


@lru_cache(maxsize=512)
def rate_per_instance(input_len: int, output_len: int, mfu: float) -> float:
    """The largest per-instance rate meeting both SLOs (p99), the way ``sim.plan`` searches it.

    0.0 when no rate does. A lone request that already misses an SLO answers at once, without the
    search (which would try ever lower rates before giving up).
    """
    ttft, tpot = lone_request(input_len, output_len, mfu)
    if ttft > TTFT_SLO_S or tpot > TPOT_SLO_S:
        return 0.0
    return max_rate(_mfu_setup(mfu), (input_len, output_len), TTFT_SLO_S, TPOT_SLO_S,
                    rel_tol=planning.PLAN_REL_TOL)


@dataclass(frozen=True)
class InstanceFigures:
    """What depends only on the request shape and MFU: found by ``sim.plan``'s search.

    ``rate`` is 0.0 and ``bound`` "infeasible" when no rate meets the SLOs; the low-load times are
    then those of a lone request.
    """

    rate: float
    bound: str
    low_load_ttft_s: float
    low_load_tpot_s: float


def compute_instance(input_len: int, output_len: int, mfu: float) -> InstanceFigures:
    """Run the search and ``sim.plan`` (no table, no cache)."""
    rate = rate_per_instance(input_len, output_len, mfu)
    if rate <= 0:
        ttft, tpot = lone_request(input_len, output_len, mfu)
        return InstanceFigures(0.0, "infeasible", ttft, tpot)
    p = planning.plan(QPS, _mfu_setup(mfu), input_len, output_len, TTFT_SLO_S, TPOT_SLO_S,
                      gpus_per_instance=GPUS_PER_INSTANCE, headroom=HEADROOM,
                      gpu_hour_usd=GPU_HOUR_USD, rate=rate)
    return InstanceFigures(p.rate_per_instance, p.bound, p.low_load_ttft_s, p.low_load_tpot_s)


def mfu_options() -> tuple[float, ...]:
    """Every MFU slider position, rounded to its step."""
    lo, hi, step = MFU_RANGE
    return tuple(round(lo + i * step, 2) for i in range(round((hi - lo) / step) + 1))


def _table() -> dict:
    """The precomputed ``InstanceFigures`` of every slider position, if present and still valid.

    The rate search costs up to ~1 s at the slowest corners (32K prompts, 4K outputs), too slow for a
    slider, so ``python -m course.panel --build-table`` stores its results in ``course/panel_table.py``.
    Before trusting it, the chapter's position is recomputed live: if the simulator's numbers have
    changed since the table was built, the table is ignored and everything is computed live.
    """
    global _TABLE
    if _TABLE is None:
        try:
            from course.panel_table import TABLE
        except ImportError:
            TABLE = {}
        key = (INPUT_LEN, OUTPUT_LEN, MFU)
        _TABLE = dict(TABLE) if TABLE.get(key) == tuple(compute_instance(*key).__dict__.values()) else {}
    return _TABLE


_TABLE: dict | None = None


@lru_cache(maxsize=512)
def instance(input_len: int, output_len: int, mfu: float) -> InstanceFigures:
    """``compute_instance``, from the precomputed table when it holds this position, else live."""
    row = _table().get((input_len, output_len, round(mfu, 2)))
    if row is not None:
        return InstanceFigures(*row)
    return compute_instance(input_len, output_len, mfu)


def build_table(processes: int | None = None) -> dict:
    """``compute_instance`` for every slider position, in parallel processes."""
    from multiprocessing import Pool

    keys = [(i, o, m) for i in INPUT_OPTIONS for o in OUTPUT_OPTIONS for m in mfu_options()]
    with Pool(processes) as pool:
        rows = pool.starmap(compute_instance, keys, chunksize=4)
    return {k: tuple(r.__dict__.values()) for k, r in zip(keys, rows)}


def write_table(path: str, table: dict) -> None:
    lines = ['"""Generated by `python -m course.panel --build-table`: do not edit.',
             "",
             "(input_len, output_len, mfu) -> (rate, bound, low_load_ttft_s, low_load_tpot_s), the",
             "results of course.panel.compute_instance for every slider position of the chapter-02 panel.",
             '"""', "", "TABLE = {"]
    lines += [f"    {k!r}: {v!r}," for k, v in sorted(table.items())]
    lines.append("}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


@lru_cache(maxsize=1024)
def design(qps: float = QPS, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
           mfu: float = MFU, gpu_hour_usd: float = GPU_HOUR_USD) -> Design:
    """Size the chapter's service for one slider position (cached on the arguments)."""
    setup = _mfu_setup(mfu)
    base = instance(input_len, output_len, mfu)
    if base.rate > 0:
        rate = base.rate
        sized = planning.size(qps, rate, output_len, gpus_per_instance=GPUS_PER_INSTANCE,
                              headroom=HEADROOM, gpu_hour_usd=gpu_hour_usd)
        lines = explain_zh(setup, input_len, output_len, low_load_ttft_s=base.low_load_ttft_s,
                           low_load_tpot_s=base.low_load_tpot_s, rate_per_instance=rate,
                           bound=base.bound, ttft_slo=TTFT_SLO_S, tpot_slo=TPOT_SLO_S)
        return Design(qps, input_len, output_len, mfu, gpu_hour_usd, True, rate, *sized, base.bound,
                      base.low_load_ttft_s, base.low_load_tpot_s, "", tuple(lines))
    ttft, tpot = base.low_load_ttft_s, base.low_load_tpot_s
    misses = []
    if ttft > TTFT_SLO_S:
        misses.append(f"单个请求的 TTFT 已是 {ttft:.2f} s，超过 {TTFT_SLO_S:g} s")
    if tpot > TPOT_SLO_S:
        misses.append(f"单个请求的 TPOT 已是 {tpot * 1e3:.1f} ms，超过 {TPOT_SLO_S * 1e3:g} ms")
    reason = "；".join(misses) or "单个请求能满足 SLO，但稍有负载就有超过 1% 的请求超标"
    lines = explain_zh(setup, input_len, output_len, low_load_ttft_s=ttft, low_load_tpot_s=tpot,
                       rate_per_instance=0.0, bound="infeasible", ttft_slo=TTFT_SLO_S,
                       tpot_slo=TPOT_SLO_S)
    return Design(qps, input_len, output_len, mfu, gpu_hour_usd, False, 0.0, None, None, None,
                  None, None, "infeasible", ttft, tpot, reason, tuple(lines))


@dataclass(frozen=True)
class LatencyCurve:
    """p50 / p99 TTFT and TPOT (seconds) of runs at each offered rate (req/s)."""

    rates: np.ndarray
    ttft_p50: np.ndarray
    ttft_p99: np.ndarray
    tpot_p50: np.ndarray
    tpot_p99: np.ndarray
    slo_ok: np.ndarray           # fraction of requests meeting both SLOs
    num_requests: int


def latency_curve_for(setup: Setup, rates, input_len: int, output_len: int, *,
                      num_requests: int = 1500, seed: int = 0, ttft_slo: float = TTFT_SLO_S,
                      tpot_slo: float = TPOT_SLO_S) -> LatencyCurve:
    """Simulate ``num_requests`` Poisson requests at each rate and take the percentiles."""
    rows = []
    for rate in rates:
        result = simulate(setup, float(rate), num_requests, input_len, output_len, seed)
        ttft, tpot = result.ttft, result.tpot
        rows.append((percentile(ttft, 50), percentile(ttft, 99), percentile(tpot, 50),
                     percentile(tpot, 99), float(meets_slos(result, ttft_slo, tpot_slo).mean())))
    cols = np.array(rows, dtype=float).reshape(-1, 5).T
    return LatencyCurve(np.asarray(rates, dtype=float), *cols, num_requests=num_requests)


@lru_cache(maxsize=512)
def latency_curve(input_len: int, output_len: int, mfu: float) -> LatencyCurve:
    """The chapter-02 panel's curve: rates at ``CURVE_FRACTIONS`` of the chosen per-instance rate.

    When no rate meets the SLOs the fractions are taken of the compute ceiling instead.
    """
    rate = instance(input_len, output_len, mfu).rate
    setup = _mfu_setup(mfu)
    if rate <= 0:
        rate = setup.peak_flops * setup.mfu / (2 * setup.params * (input_len + output_len))
    rates = tuple(rate * f for f in CURVE_FRACTIONS)
    return latency_curve_for(setup, rates, input_len, output_len, num_requests=CURVE_REQUESTS)


@dataclass(frozen=True)
class Distribution:
    """Per-request TTFT and TPOT (seconds) of one run, with its summary figures."""

    rate: float
    ttft: np.ndarray
    tpot: np.ndarray
    stats: dict


@lru_cache(maxsize=256)
def distribution(rate: float, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
                 mfu: float = MFU, num_requests: int = 1500, seed: int = 0) -> Distribution:
    """One run of the chapter's instance at ``rate``: the spread the chapter-01 slider shows."""
    result = simulate(_mfu_setup(mfu), float(rate), num_requests, input_len, output_len, seed)
    s = summarize(result, TTFT_SLO_S, TPOT_SLO_S)
    stats = {k: s[k] for k in ("ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99",
                               "slo_ok", "goodput")}
    stats["throughput"] = s["request_rate"]
    return Distribution(float(rate), result.ttft, result.tpot, stats)


# --- Rendering helpers -------------------------------------------------------------------------

def figure_png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes (for an ``ipywidgets.Image``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


BOUND_LABEL = {
    "prefill_compute": "算力（prefill_compute）",
    "decode_bandwidth": "显存带宽（decode_bandwidth）",
    "kv_capacity": "KV 容量（kv_capacity）",
    "max_num_seqs": "并发上限（max_num_seqs）",
    "infeasible": "无解（单实例满足不了 SLO）",
}


def design_rows(d: Design) -> list[tuple[str, str]]:
    """The panel's table: (label in Chinese, value) for a ``Design``."""
    rows = [
        ("低负载 TTFT / TPOT（中位数）", f"{_fmt_s(d.low_load_ttft_s)} / {_fmt_s(d.low_load_tpot_s)}"),
        ("单实例满足 SLO 的最大速率", f"{fmt_rate(d.rate_per_instance)} req/s" if d.feasible else "—"),
    ]
    if d.feasible:
        rows += [
            ("实例数（不加余量 / 加 30% 余量）", f"{d.instances_no_headroom} / {d.instances}"),
            ("GPU 数", f"{d.gpus} 张 H100"),
            ("每小时成本", f"${d.usd_per_hour:,.0f}"),
            ("每百万输出 token 成本", f"${d.usd_per_million_output_tokens:.2f}"),
        ]
    rows.append(("瓶颈", BOUND_LABEL.get(d.bound, d.bound)))
    if not d.feasible:
        rows.append(("原因", d.reason))
    return rows


def design_html(d: Design) -> str:
    """The table and the explanation as HTML (Chinese; the browser supplies the fonts)."""
    cells = "".join(f"<tr><td style='padding:2px 12px 2px 0'>{html.escape(k)}</td>"
                    f"<td><b>{html.escape(v)}</b></td></tr>" for k, v in design_rows(d))
    notes = "".join(f"<li>{html.escape(line)}</li>" for line in d.explanation)
    return (f"<table>{cells}</table><details open><summary>这些数字从哪里来</summary>"
            f"<ul style='margin-top:4px'>{notes}</ul></details>")


# --- Widgets ----------------------------------------------------------------------------------

class DesignPanel:
    """Chapter 02's panel. ``sliders`` maps qps / input_len / output_len / mfu / gpu_hour_usd to
    their widgets; after any change ``design``, ``curve``, ``figure``, ``table`` and ``image`` hold
    what is shown, and ``last_update_s`` how long the update took."""

    def __init__(self):
        import ipywidgets as w
        from course import plots

        self._plots = plots
        style = {"description_width": "150px"}
        layout = w.Layout(width="560px")
        common = dict(continuous_update=False, style=style, layout=layout)
        self.sliders = {
            "qps": w.SelectionSlider(options=QPS_OPTIONS, value=QPS, description="峰值 QPS", **common),
            "input_len": w.SelectionSlider(options=INPUT_OPTIONS, value=INPUT_LEN,
                                           description="提示词长度 (token)", **common),
            "output_len": w.SelectionSlider(options=OUTPUT_OPTIONS, value=OUTPUT_LEN,
                                            description="输出长度 (token)", **common),
            "mfu": w.FloatSlider(min=MFU_RANGE[0], max=MFU_RANGE[1], step=MFU_RANGE[2], value=MFU,
                                 readout_format=".2f", description="MFU", **common),
            "gpu_hour_usd": w.FloatSlider(min=PRICE_RANGE[0], max=PRICE_RANGE[1], step=PRICE_RANGE[2],
                                          value=GPU_HOUR_USD, readout_format=".2f",
                                          description="每卡每小时 ($)", **common),
        }
        self.table = w.HTML()
        self.image = w.Image(format="png")
        self.status = w.HTML()
        self.widget = w.VBox([w.VBox(list(self.sliders.values())), self.table, self.image, self.status])
        self.figure = None
        self.design = self.curve = None
        self.last_update_s = 0.0
        for s in self.sliders.values():
            s.observe(self._on_change, names="value")
        self.update()

    def values(self) -> dict:
        """The sliders' values, with MFU and price rounded to their steps (floats drift)."""
        v = {k: s.value for k, s in self.sliders.items()}
        v["mfu"] = round(float(v["mfu"]), 2)
        v["gpu_hour_usd"] = round(float(v["gpu_hour_usd"]), 2)
        return v

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        start = time.perf_counter()
        v = self.values()
        self.design = design(v["qps"], v["input_len"], v["output_len"], v["mfu"], v["gpu_hour_usd"])
        curve = latency_curve(v["input_len"], v["output_len"], v["mfu"])
        self.table.value = design_html(self.design)
        if curve is not self.curve:          # QPS and price do not move the curve: no redraw
            self.curve = curve
            self.figure = self._plots.latency_vs_rate_figure(
                curve, TTFT_SLO_S, TPOT_SLO_S, self.design.rate_per_instance or None)
            self.image.value = figure_png(self.figure)
        self.last_update_s = time.perf_counter() - start
        self.status.value = (f"<small>曲线每个点模拟 {self.curve.num_requests} 个请求（与最大速率的搜索相同）；"
                             f"本次更新用时 {self.last_update_s:.2f} s</small>")

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def design_panel() -> DesignPanel:
    """Build chapter 02's panel at the chapter's values (200 QPS, 2000 / 500 tokens, MFU 0.4)."""
    return DesignPanel()


RATE_OPTIONS = (1, 2, 4, 6, 8, 10, 12, 14, 15, 16, 17, 18, 19, 20, 22, 25)


class RatePanel:
    """Chapter 01's panel: a rate slider over the chapter's instance (2000 in / 500 out, MFU 0.4);
    ``dist`` holds the run shown, ``figure`` / ``image`` its TTFT and TPOT distributions and
    ``table`` the summary."""

    def __init__(self, rates=RATE_OPTIONS, value: float = 10, *, input_len: int = INPUT_LEN,
                 output_len: int = OUTPUT_LEN, mfu: float = MFU):
        import ipywidgets as w
        from course import plots

        self._plots = plots
        self.input_len, self.output_len, self.mfu = input_len, output_len, mfu
        self.slider = w.SelectionSlider(options=tuple(rates), value=value, description="到达速率 (req/s)",
                                        continuous_update=False, style={"description_width": "130px"},
                                        layout=w.Layout(width="560px"))
        self.table = w.HTML()
        self.image = w.Image(format="png")
        self.widget = w.VBox([self.slider, self.table, self.image])
        self.figure = self.dist = None
        self.last_update_s = 0.0
        self.slider.observe(lambda _c: self.update(), names="value")
        self.update()

    def update(self) -> None:
        start = time.perf_counter()
        self.dist = distribution(self.slider.value, self.input_len, self.output_len, self.mfu)
        s = self.dist.stats
        rows = [
            ("TTFT 平均 / P50 / P99", f"{_fmt_s(s['ttft_mean'])} / {_fmt_s(s['ttft_p50'])} / {_fmt_s(s['ttft_p99'])}"),
            ("TPOT 平均 / P50 / P99", f"{_fmt_s(s['tpot_mean'])} / {_fmt_s(s['tpot_p50'])} / {_fmt_s(s['tpot_p99'])}"),
            ("满足 SLO 的比例", f"{s['slo_ok']:.1%}"),
            ("吞吐 / goodput", f"{s['throughput']:.2f} / {s['goodput']:.2f} req/s"),
        ]
        self.table.value = "<table>" + "".join(
            f"<tr><td style='padding:2px 12px 2px 0'>{html.escape(k)}</td><td><b>{html.escape(v)}</b></td></tr>"
            for k, v in rows) + "</table>"
        self.figure = self._plots.distribution_figure(self.dist.ttft, self.dist.tpot, TTFT_SLO_S, TPOT_SLO_S,
                                                      title=f"rate {self.dist.rate:g} req/s")
        self.image.value = figure_png(self.figure)
        self.last_update_s = time.perf_counter() - start

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def rate_panel(**kwargs) -> RatePanel:
    """Build chapter 01's rate slider panel."""
    return RatePanel(**kwargs)


def clear_caches() -> None:
    """Forget every cached computation (tests use it to time cold updates)."""
    global _TABLE
    _TABLE = None
    for f in (_mfu_setup, lone_request, rate_per_instance, instance, design, latency_curve,
              distribution):
        f.cache_clear()


def use_table(enabled: bool) -> None:
    """Turn the precomputed table on (default) or off (everything live; for tests and timing)."""
    global _TABLE
    clear_caches()
    if not enabled:
        _TABLE = {}


if __name__ == "__main__":
    import os
    import sys

    if sys.argv[1:] != ["--build-table"]:
        sys.exit("usage: python -m course.panel --build-table")
    started = time.perf_counter()
    table = build_table()
    write_table(os.path.join(os.path.dirname(os.path.abspath(__file__)), "panel_table.py"), table)
    print(f"{len(table)} positions in {time.perf_counter() - started:.0f} s")
