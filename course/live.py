"""The live panels of chapters 01 and 02 (and the base chapter 03's uses): widgets driving the pure
computations of ``course.panel``.

Kept apart from ``course.panel`` on purpose: chapter 02's shipped table (``course.memo``) is
fingerprinted by ``course/panel.py``, whose functions compute its answers, so a change to how the
panels look or thread does not retire it. ``panel.design_panel()`` / ``panel.rate_panel()`` build
these.
"""

from __future__ import annotations

import html
import threading
import time

from course import plots
from course.explain import fmt_rate
from course.kit import rows_html
from course.estimate import estimate_changed, estimated_design
from course.panel import (CHAPTER, DTYPE_OPTIONS, GPU_HOUR_USD, GPU_OPTIONS, INPUT_LEN, INPUT_OPTIONS, MFU, MFU_RANGE,
                          MODEL_OPTIONS, OUTPUT_LEN, OUTPUT_OPTIONS, PRICE_RANGE, QPS, QPS_OPTIONS, RATE_OPTIONS,
                          TP_OPTIONS, TPOT_SLO_OPTIONS, TPOT_SLO_S, TTFT_SLO_OPTIONS, TTFT_SLO_S, Hardware, _fmt_s,
                          design, design_html, distribution, latency_curve, rate_changed, rate_options, ready,
                          warm_up, what_changed, while_current)
from sim import capacity

BUSY_HTML = "<span style='color:#b36b00'>⏳ 计算中……（新的改动会取代还没算完的旧改动）</span>"
CURVE_BUSY_HTML = "<span style='color:#b36b00'>⏳ 数字已更新，延迟曲线计算中……</span>"
STOPPED = object()          # what a stage's computation returns when a newer move stopped its searches
ESTIMATE_BUSY_HTML = ("<span style='color:#b36b00'>⏳ 数字是估算：稳态搜索正在算精确值（零点几秒到几秒），"
                      "算完先换成精确的数字，再补上延迟曲线……</span>")


class Live:
    """What the live panels share: every change asks for an update; the update runs in a worker
    thread (``background=True``, in a notebook) so the kernel keeps taking slider moves, a busy line
    shows meanwhile, and a newer move supersedes an older one: an update that is no longer the
    latest stops at its next stage and shows nothing, so the panel never shows a stale answer. With
    ``background=False`` (tests, benchmarks) the update runs in the caller, the same code path.

    A panel may split its update in two (``two_stage = True``): ``first`` (quick: a provisional
    answer) runs as soon as the move arrives, even while an older move's ``rest`` (slow: a search)
    still computes, and ``rest`` then waits its turn; ``update`` is the two in order. Whatever a
    stage shows, the busy line included, it shows under ``_show_lock``, checking there that its move
    is still the latest; a move becomes the latest under the same lock. So an older stage never
    overwrites a newer move's display."""

    two_stage = False

    def _init_live(self, background: bool) -> None:
        self.background = background
        self._generation = 0
        self._lock = threading.Lock()          # one slow stage at a time
        self._show_lock = threading.Lock()     # a stage's check-and-show is atomic
        self._thread = None
        self.last_update_s = 0.0
        self.superseded = 0

    def _request(self, control: str | None) -> None:
        with self._show_lock:
            self._generation += 1
            generation = self._generation
            self.busy.value = BUSY_HTML
        if not self.background:
            self._run(generation, control)
            return
        self._thread = threading.Thread(target=self._run, args=(generation, control), daemon=True)
        self._thread.start()

    def _run(self, generation: int, control) -> None:
        current = lambda: generation == self._generation          # noqa: E731
        try:
            if self.two_stage and not self.first(control, current):
                self.superseded += 1
                return
            with self._lock:                   # one slow stage at a time; skip it if a newer move came
                if not current():
                    self.superseded += 1
                    return
                done = (self.rest if self.two_stage else self.update)(control, current=current)
        except Exception as e:                 # show it in the panel rather than lose it in a thread
            with self._show_lock:
                if current():
                    self.busy.value = f"<span style='color:#c00'>出错：{html.escape(repr(e))}</span>"
            raise
        if done:
            with self._show_lock:
                if current():
                    self.busy.value = ""
        else:
            self.superseded += 1

    def wait(self) -> None:
        """Wait for the update in flight (background mode)."""
        if self._thread is not None:
            self._thread.join()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def hardware_choices(w, hw: Hardware, width="150px"):
    layout = w.Layout(width=width)
    style = {"description_width": "60px"}
    return {
        "model": w.Dropdown(options=MODEL_OPTIONS, value=hw.model, description="模型", style=style,
                            layout=w.Layout(width="220px")),
        "gpu": w.Dropdown(options=GPU_OPTIONS, value=hw.gpu, description="GPU", style=style, layout=layout),
        "tp": w.Dropdown(options=TP_OPTIONS, value=hw.tp, description="TP", style=style, layout=w.Layout(width="120px")),
        "weight_dtype": w.Dropdown(options=DTYPE_OPTIONS, value=hw.weight_dtype, description="权重",
                                   style=style, layout=w.Layout(width="130px")),
        "kv_dtype": w.Dropdown(options=DTYPE_OPTIONS, value=hw.kv_dtype, description="KV", style=style,
                               layout=w.Layout(width="130px")),
    }


class DesignPanel(Live):
    """Chapter 02's panel. ``choices`` maps model / gpu / tp / weight_dtype / kv_dtype to dropdowns,
    ``sliders`` maps qps / input_len / output_len / mfu / gpu_hour_usd / ttft_slo / tpot_slo to
    sliders; after a move is done ``design`` (``sim.plan``'s figures), ``curve``, ``figure`` (a
    ``plots.Chart``), ``table``, ``chart``, ``changed`` hold what is shown. A move to a position that
    needs a search shows ``estimate`` (``course.estimate.estimated_design``) in ``table`` first. Timings of the
    last move: ``first_s`` (its first figures, estimate or exact), ``answer_s`` (the exact figures),
    ``last_update_s`` (the chart too).

    Two stages (``Live``): ``first`` shows the estimate, ``rest`` the exact figures and the curve. A
    newer move stops the older move's searches (``panel.while_current``) only when it needs another
    search: a QPS or price move, or a move and back, lets the search in flight finish and use it."""

    two_stage = True

    def __init__(self, *, background: bool = True):
        import ipywidgets as w

        self._init_live(background)
        style = {"description_width": "150px"}
        layout = w.Layout(width="560px")
        common = dict(continuous_update=False, style=style, layout=layout)
        self.choices = hardware_choices(w, CHAPTER)
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
            "ttft_slo": w.SelectionSlider(options=TTFT_SLO_OPTIONS, value=TTFT_SLO_S,
                                          description="TTFT SLO (s, p99)", **common),
            "tpot_slo": w.SelectionSlider(options=TPOT_SLO_OPTIONS, value=TPOT_SLO_S,
                                          description="TPOT SLO (s, p99)", **common),
        }
        self.controls = {**self.choices, **self.sliders}
        self.changed = w.HTML()
        self.busy = w.HTML()
        self.table = w.HTML()
        self.chart = w.HTML()
        self.status = w.HTML()
        self.widget = w.VBox([w.HBox(list(self.choices.values())), w.VBox(list(self.sliders.values())),
                              self.changed, self.busy, self.table, self.chart, self.status])
        self.figure = None
        self.design = self.curve = self.estimate = None
        self.answer_s, self.first_s = 0.0, None
        self._start = time.perf_counter()
        for name, control in self.controls.items():
            control.observe(lambda change, name=name: self._request(name), names="value")
        warm_up()                  # the compiled engine loads now (~0.5 s), not on the first search
        self._wanted = self._position()[2]
        self.rest()                # the first figures: exact, nothing to show before them

    def values(self) -> dict:
        """The controls' values, with MFU and price rounded to their steps (floats drift)."""
        v = {k: s.value for k, s in self.controls.items()}
        v["mfu"] = round(float(v["mfu"]), 2)
        v["gpu_hour_usd"] = round(float(v["gpu_hour_usd"]), 2)
        return v

    def _request(self, control: str | None) -> None:
        self._wanted = self._position()[2]     # what a search in flight must still be for
        super()._request(control)

    def _position(self):
        """The hardware the controls name, ``design``'s arguments for them, and the search's key:
        the controls a search depends on (not QPS or price), ``panel.instance``'s arguments."""
        v = self.values()
        hw = Hardware(v["model"], v["gpu"], v["tp"], v["weight_dtype"], v["kv_dtype"])
        key = (v["input_len"], v["output_len"], v["mfu"], hw, v["ttft_slo"], v["tpot_slo"])
        return hw, (v["qps"], *key[:3], v["gpu_hour_usd"], hw, *key[4:]), key

    def _while_wanted(self, key: tuple, f, *args):
        """``f(*args)``, its searches stopped once the latest move wants another key (``STOPPED``)."""
        try:
            return while_current(lambda: self._wanted == key, f, *args)
        except capacity.Cancelled:
            return STOPPED

    def first(self, control: str | None = None, current=lambda: True) -> bool:
        """The quick stage: where the answer needs a search (``ready`` is False), show the estimate
        (``estimated_design``: every figure marked as one, the busy line saying the exact one is on
        its way) at once; ``first_s`` is when the move's first figures showed. False when a newer
        move came in."""
        start = time.perf_counter()
        _, args, key = self._position()
        guess = None
        if not ready(*key):
            guess = self._while_wanted(key, estimated_design, *args)
            if guess is STOPPED:
                return False
        with self._show_lock:
            if not current():
                return False
            self._start, self.first_s = start, None
            if guess is not None:
                self.changed.value = f"<b>变化：</b>{html.escape(estimate_changed(self.design, guess, control))}"
                self.table.value = design_html(guess)
                self.busy.value = ESTIMATE_BUSY_HTML
                self.estimate = guess
                self.first_s = time.perf_counter() - start
        return True

    def rest(self, control: str | None = None, current=lambda: True) -> bool:
        """The exact figures (``design``: ``sim.plan``'s, from the table, the cache or a search),
        the "what changed" line and the explanation (``answer_s`` after the move), then the latency
        curve and its chart (``last_update_s``), the busy line showing until both are done. Returns
        False, having shown nothing more, as soon as ``current()`` turns False: a newer move came in."""
        start = self._start
        hw, args, key = self._position()
        d = self._while_wanted(key, design, *args)
        if d is STOPPED:
            return False
        with self._show_lock:
            if not current():
                return False
            before, self.design = self.design, d
            self.changed.value = f"<b>变化：</b>{html.escape(what_changed(before, d, control))}"
            self.table.value = design_html(d)
            self.answer_s = time.perf_counter() - start
            if self.first_s is None:
                self.first_s = self.answer_s
            if self.busy.value:
                self.busy.value = CURVE_BUSY_HTML
        curve = latency_curve(*key)
        redraw = curve is not self.curve or self.figure is None
        figure = svg = None
        if redraw and curve is not None:           # drawn outside the lock: a newer move need not wait
            figure = plots.latency_vs_rate_chart(curve, d.ttft_slo, d.tpot_slo, d.rate_per_instance or None,
                                                 title=hw.label())
            svg = figure.svg()
        with self._show_lock:
            if not current():
                return False
            if redraw:
                self.curve, self.figure = curve, figure
                self.chart.value = svg or ""
            self.last_update_s = time.perf_counter() - start
            note = (f"曲线每个点模拟 {self.curve.num_requests} 个请求，比最大速率搜索的稳态压测短，"
                    f"所以曲线越过 SLO 线的地方在选定速率右边一点；" if self.curve else "")
            shown = (f"估算 {self.first_s * 1e3:.0f} ms，" if self.first_s < self.answer_s * 0.999 else "")
            self.status.value = (f"<small>{note}本次更新：{shown}数字 {self.answer_s * 1e3:.0f} ms，"
                                 f"连同曲线 {self.last_update_s * 1e3:.0f} ms</small>")
        return True

    def update(self, control: str | None = None, current=lambda: True) -> bool:
        """Recompute and show the controls' position: ``first`` (an estimate where a search is
        needed), then ``rest`` (the exact figures and the curve)."""
        return self.first(control, current) and self.rest(control, current)


class RatePanel(Live):
    """Chapter 01's panel: the instance choice and a rate slider (2000 in / 500 out, MFU 0.4);
    ``dist`` holds the run shown, ``figure`` (a ``plots.Chart``) its TTFT and TPOT distributions
    over the previous run's (grey, dashed), ``table`` the summary with the rate against the
    instance's compute ceiling, ``changed`` what the last move did.

    Choosing another instance keeps the offered rate (the slider's positions become that
    instance's range, the current rate among them): the same traffic on a faster or slower
    instance is what the choice is for. (Rescaling the rate with the instance, as this panel once
    did, put every instance at the same share of its ceiling, so the curves barely moved.)"""

    def __init__(self, rates=RATE_OPTIONS, value: float = 10, *, input_len: int = INPUT_LEN,
                 output_len: int = OUTPUT_LEN, mfu: float = MFU, background: bool = True):
        import ipywidgets as w

        self._init_live(background)
        self.input_len, self.output_len, self.mfu = input_len, output_len, mfu
        self.choices = hardware_choices(w, CHAPTER)
        self.slider = w.SelectionSlider(options=tuple(rates), value=value, description="到达速率 (req/s)",
                                        continuous_update=False, style={"description_width": "130px"},
                                        layout=w.Layout(width="560px"))
        self.busy = w.HTML()
        self.changed = w.HTML()
        self.table = w.HTML()
        self.chart = w.HTML()
        self.widget = w.VBox([w.HBox(list(self.choices.values())), self.slider, self.changed, self.busy,
                              self.table, self.chart])
        self.controls = {"rate": self.slider, **self.choices}
        self.figure = self.dist = None
        self._rescaling = False
        self.hardware = CHAPTER
        self.slider.observe(lambda _c: None if self._rescaling else self._request("rate"), names="value")
        for name, control in self.choices.items():
            control.observe(lambda _c, name=name: self._request(name), names="value")
        self.update()

    def _set_rates(self, hw: Hardware) -> None:
        """The new instance's slider positions, keeping the rate shown (no update fires meanwhile)."""
        rate = self.slider.value
        self._rescaling = True
        try:
            self.slider.options = rate_options(hw, self.mfu, self.input_len, self.output_len, keep=rate)
            self.slider.value = rate
        finally:
            self._rescaling = False
        self.hardware = hw

    def update(self, control: str | None = None, current=lambda: True) -> bool:
        start = time.perf_counter()
        c = self.choices
        hw = Hardware(c["model"].value, c["gpu"].value, c["tp"].value, c["weight_dtype"].value, c["kv_dtype"].value)
        if hw != self.hardware:
            self._set_rates(hw)
        try:
            dist = distribution(self.slider.value, self.input_len, self.output_len, self.mfu, hw=hw)
        except ValueError as e:
            if not current():
                return False
            self.dist, self.figure = None, None
            self.changed.value = ""
            self.table.value = f"<b>{html.escape(str(e))}</b>"
            self.chart.value = ""
            self.last_update_s = time.perf_counter() - start
            return True
        if not current():
            return False
        before, self.dist = self.dist, dist
        s = dist.stats
        rows = [
            ("TTFT 平均 / P50 / P99", f"{_fmt_s(s['ttft_mean'])} / {_fmt_s(s['ttft_p50'])} / {_fmt_s(s['ttft_p99'])}"),
            ("TPOT 平均 / P50 / P99", f"{_fmt_s(s['tpot_mean'])} / {_fmt_s(s['tpot_p50'])} / {_fmt_s(s['tpot_p99'])}"),
            ("满足 SLO 的比例", f"{s['slo_ok']:.1%}"),
            ("吞吐 / goodput", f"{s['throughput']:.2f} / {s['goodput']:.2f} req/s"),
            ("这个实例的算力上限", f"{fmt_rate(dist.compute_ceiling)} req/s（当前速率是它的 {dist.load:.0%}）"),
        ]
        self.table.value = rows_html(rows)
        self.changed.value = f"<b>变化：</b>{html.escape(rate_changed(before, dist, control))}"
        previous = None if before is None or before is dist else (before.ttft, before.tpot)
        self.figure = plots.distribution_chart(dist.ttft, dist.tpot, TTFT_SLO_S, TPOT_SLO_S, before=previous,
                                               title=f"{hw.label()} · rate {dist.rate:g} req/s")
        self.chart.value = self.figure.svg()
        self.last_update_s = time.perf_counter() - start
        return True
