"""Chapter 08 (speculative decoding): the closed form against the simulator, the load at which
speculation stops paying, draft costs (draft model, EAGLE, MTP), tree drafts, a switch by load over
a day, and the chapter's panel.

The instance is chapter 02's (``course.panel.chapter_setup()``: 70B FP8 on 8 x H100) unless a
caller passes another ``Setup``; the closed-loop runs are chapter 04's (``course.ch04``: 1000 tokens
in, 256 out), so the two chapters' tables agree. Runs are cached (``lru_cache``): a panel move that
repeats a choice answers at once.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from course import memo, plots
from course.ch04 import SPEC_INPUT, SPEC_OUTPUT, spec_vs_load, table  # noqa: F401  (spec_vs_load, table: the notebook's)
from sim import Setup, presets, run, summarize
from sim.fleet import load as fleet_load
from sim.speculative import Speculative
from sim.workload_spec import Workload
from course.kit import rows_html

CLIENTS = (1, 4, 16, 32, 48, 64, 96, 128, 192, 256)
TTFT_SLO, TPOT_SLO = 2.0, 0.015          # an interactive service: p99 TTFT 2 s, TPOT 15 ms per request


def base_setup() -> Setup:
    from course.panel import chapter_setup
    return chapter_setup()


# --- 1. the closed form, and the step-level form at any batch ------------------------------------

def step_speedup(setup: Setup, spec: Speculative, batch: int, context: int = SPEC_INPUT + SPEC_OUTPUT // 2) -> float:
    """TPOT speedup of ``batch`` decoders each over ``context`` tokens, from ``Setup.step_time``:
    a plain step emits 1 token per decoder; a speculative step verifies k + 1 per decoder, adds k
    draft passes of ``draft_cost`` x the plain step, and emits ``tokens_per_step()`` on average.
    At batch 1 this is ``spec.speedup()`` up to the verified tokens' extra compute."""
    ctx = batch * context
    plain = setup.step_time(batch, ctx, 0, batch)
    verify = setup.step_time(batch * (spec.k + 1), ctx, 0, batch)
    return spec.tokens_per_step() * plain / (verify + spec.k * spec.draft_cost * plain)


def step_crossover_batch(setup: Setup, spec: Speculative, limit: int = 4096) -> int | None:
    """The smallest decode batch at which ``step_speedup`` is at most 1 (None below ``limit``)."""
    for b in range(1, limit + 1):
        if step_speedup(setup, spec, b) <= 1:
            return b
    return None


def crossover(points) -> float | None:
    """The concurrency where the simulated TPOT speedup falls to 1: linear in log(concurrency)
    between the last point above 1 and the first at or below it (None if it never does)."""
    for lo, hi in zip(points, points[1:]):
        if lo.speedup > 1 >= hi.speedup:
            f = (lo.speedup - 1) / (lo.speedup - hi.speedup)
            return math.exp(math.log(lo.clients) + f * (math.log(hi.clients) - math.log(lo.clients)))
    if points and points[0].speedup <= 1:
        return float(points[0].clients)
    return None


def crossover_figure(base: Setup, alphas=(0.6, 0.7, 0.8, 0.9), k: int = 4, draft_cost: float = 0.05,
                     clients=CLIENTS):
    """Left: simulated TPOT speedup against concurrent users per alpha, with the 1x line and each
    crossover marked. Right: output tokens/s, speculation on versus off, for the middle alpha."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9.5, 3.4))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.88, wspace=0.28)
    left, right = fig.subplots(1, 2)
    for i, a in enumerate(alphas):
        pts = spec_vs_load(base, k, a, draft_cost, clients)
        left.plot([p.clients for p in pts], [p.speedup for p in pts], "o-", ms=3, color=f"C{i}", label=f"alpha={a:g}")
        c = crossover(pts)
        if c is not None:
            left.axvline(c, color=f"C{i}", ls=":", lw=1)
    left.axhline(1.0, color="#d62728", ls="--", lw=1, label="1x (no gain)")
    left.set_xscale("log", base=2)
    left.set_xlabel("concurrent users (closed loop, log scale)")
    left.set_ylabel("TPOT speedup (off / on)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    pts = spec_vs_load(base, k, alphas[len(alphas) // 2], draft_cost, clients)
    right.plot([p.clients for p in pts], [p.tps_plain for p in pts], "o-", ms=3, color="C7", label="off")
    right.plot([p.clients for p in pts], [p.tps_spec for p in pts], "o-", ms=3, color="C2", label="on")
    right.set_xscale("log", base=2)
    right.set_xlabel("concurrent users (closed loop, log scale)")
    right.set_ylabel("output tokens/s of the instance")
    right.set_title(f"alpha={alphas[len(alphas) // 2]:g}", fontsize=9)
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle(f"k={k}, draft cost={draft_cost:g}: where speculation stops paying")
    return fig


# --- 2. draft costs: a draft model, EAGLE, MTP ------------------------------------------------

def eagle_draft_cost(model: str = "llama-3-70b") -> float:
    """EAGLE's draft pass as a fraction of a target pass, by weights read: one decoder layer plus
    the LM head (shared with the target, read again) over the whole model."""
    m = presets.model(model)
    layer = (m.total_params - 2 * m.vocab * m.hidden) / m.layers
    return (layer + m.vocab * m.hidden) / m.total_params


def draft_model_cost(draft: str, target: str = "llama-3-70b", gpu: str = "h100-sxm", tp: int = 8,
                     batch: int = 1, context: int = SPEC_INPUT) -> float:
    """A separate draft model's decode step over the target's, both on the same ``tp`` GPUs in FP8
    (calibrated presets): the fixed part of a step (host, kernel launches, all-reduce) does not
    shrink with the model, so a small draft costs far more than its share of the weights."""
    d = presets.instance(draft, gpu, tp=tp, weight_dtype="fp8")
    t = presets.instance(target, gpu, tp=tp, weight_dtype="fp8")
    return d.step_time(batch, batch * context, 0, batch) / t.step_time(batch, batch * context, 0, batch)


def best_k(alpha: float, draft_cost: float, k_max: int = 16) -> tuple[int, float]:
    """(k, closed-form speedup) maximising ``Speculative.speedup`` over k = 1..k_max."""
    return max(((k, Speculative(k=k, alpha=alpha, draft_cost=draft_cost).speedup()) for k in range(1, k_max + 1)),
               key=lambda x: x[1])


# --- 3. tree drafts ---------------------------------------------------------------------------

def chain_accepted(alpha: float, drafts: int) -> float:
    """Expected accepted drafts of a chain of ``drafts`` tokens: alpha + alpha^2 + ... + alpha^drafts."""
    return sum(alpha ** j for j in range(1, drafts + 1))


def best_tree(rank_accept, budget: int) -> tuple[float, list[int]]:
    """The tree of ``budget`` draft nodes with the most expected accepted tokens, and its width per
    depth. ``rank_accept[r]`` is the chance that the target's token is the draft's (r+1)-th choice
    at a position (the same at every depth, so the events at one node's children are disjoint).
    A node is accepted when its whole path is, with the product of its ranks' chances; expected
    accepted length = the sum of the nodes' chances, and the best tree is the ``budget`` nodes with
    the largest chances (a child never beats its parent, nor a sibling of a better rank, so they
    form a tree). Greedy on a heap; the chances are taken best rank first."""
    q = [float(x) for x in rank_accept]
    if not q or any(not 0 <= x <= 1 for x in q) or sum(q) > 1 + 1e-12:
        raise ValueError(f"rank_accept must be chances in [0, 1] summing to at most 1, got {rank_accept!r}")
    q.sort(reverse=True)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be a whole number >= 0, got {budget!r}")
    heap = [(-q[0], 1, 0, 1.0)]     # (-chance, depth, rank among its siblings, its parent's chance)
    total, widths = 0.0, {}
    for _ in range(budget):
        if not heap:
            break
        neg, depth, rank, parent = heapq.heappop(heap)
        p = -neg
        total += p
        widths[depth] = widths.get(depth, 0) + 1
        heapq.heappush(heap, (-p * q[0], depth + 1, 0, p))                     # its best child
        if rank + 1 < len(q):                                                    # its next sibling
            heapq.heappush(heap, (-parent * q[rank + 1], depth, rank + 1, parent))
    return total, [widths[d] for d in sorted(widths)]


def tree_rows(rank_accept, budgets=(1, 2, 4, 8, 16, 32)) -> list[tuple]:
    """Per verification budget: chain vs best tree, expected accepted drafts and widths."""
    rows = []
    for n in budgets:
        tree, widths = best_tree(rank_accept, n)
        rows.append((n, chain_accepted(rank_accept[0], n), tree, widths))
    return rows


def tree_step_speedup(setup: Setup, accepted: float, nodes: int, depth: int, draft_cost: float, batch: int,
                      context: int = SPEC_INPUT + SPEC_OUTPUT // 2) -> float:
    """``step_speedup`` for any draft shape: ``nodes`` drafts verified per decoder, ``depth``
    draft passes, 1 + ``accepted`` tokens emitted per step on average."""
    ctx = batch * context
    plain = setup.step_time(batch, ctx, 0, batch)
    return (1 + accepted) * plain / (setup.step_time(batch * (nodes + 1), ctx, 0, batch) + depth * draft_cost * plain)


# --- 4. switching by load over a day -----------------------------------------------------------

@dataclass(frozen=True)
class LoadSwitch:
    """Speculation off when the running requests exceed ``off_above``, back on when they fall to
    ``on_below`` or fewer; in between it keeps its state (hysteresis: no flapping at the edge)."""

    off_above: float
    on_below: float

    def __post_init__(self):
        for name in ("off_above", "on_below"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"LoadSwitch.{name} must be a finite number >= 0, got {v!r}")
        if self.on_below > self.off_above:
            raise ValueError(f"LoadSwitch.on_below ({self.on_below!r}) must be <= off_above ({self.off_above!r})")

    def decide(self, running: float, on: bool) -> bool:
        """Whether speculation is on for the next period, given the running requests now."""
        if isinstance(running, bool) or not isinstance(running, (int, float)) or not running >= 0:
            raise ValueError(f"running must be a number >= 0, got {running!r}")
        if running > self.off_above:
            return False
        if running <= self.on_below:
            return True
        return bool(on)


DAY_HOURS = 24
HOUR_S = 20.0          # one hour of the day compressed into 20 s of simulated time
WARM_S = 5.0           # arrivals before the hour that warm its run up (simulated, not counted)


def day_load(mean_rate: float = 14.0, peak_to_trough: float = 5.0, seed: int = 0) -> Workload:
    """A day-shaped Poisson load (``sim.fleet.load.daily``), 24 hours compressed to HOUR_S each,
    peaking at 14:00; chapter 04's request lengths."""
    return fleet_load.daily(mean_rate, DAY_HOURS * HOUR_S, SPEC_INPUT, SPEC_OUTPUT, peak_to_trough=peak_to_trough,
                            period_s=DAY_HOURS * HOUR_S, peak_at_s=14 * HOUR_S, seed=seed)


@dataclass(frozen=True)
class HourRun:
    hour: int
    requests: int
    ttft: np.ndarray
    tpot: np.ndarray
    running: float        # mean running (decoding) requests per step


def _hour_slice(day: Workload, hour: int) -> tuple[Workload, int]:
    arr = np.asarray(day.arrival)
    start, end = hour * HOUR_S, (hour + 1) * HOUR_S
    idx = np.nonzero((arr >= max(0.0, start - WARM_S)) & (arr < end))[0]
    counted = int(np.sum(arr[idx] >= start))
    w = Workload("trace", tuple((arr[idx] - arr[idx][0]).tolist()), tuple(np.asarray(day.input_len)[idx].tolist()),
                 tuple(np.asarray(day.output_len)[idx].tolist()))
    return w, counted


@lru_cache(maxsize=256)
def hour_run(setup: Setup, hour: int, mean_rate: float = 14.0, peak_to_trough: float = 5.0) -> HourRun:
    """One hour of ``day_load`` on ``setup``, as its own run: the engine cannot switch speculation
    in the middle of a run, so each hour is a segment, warmed up by the WARM_S before it."""
    w, counted = _hour_slice(_day(mean_rate, peak_to_trough), hour)
    r = run(setup, w)
    keep = slice(len(r) - counted, len(r))
    steps = r.steps
    running = float(np.sum(steps.decoders * steps.duration) / np.sum(steps.duration))
    return HourRun(hour, counted, r.ttft[keep], r.tpot[keep], running)


@lru_cache(maxsize=8)
def _day(mean_rate, peak_to_trough):
    return day_load(mean_rate, peak_to_trough)


@dataclass(frozen=True)
class DayResult:
    policy: str
    on_hours: tuple          # the hours with speculation on
    ttft: np.ndarray
    tpot: np.ndarray
    hours: tuple             # the HourRun used for each hour

    def slo_ok(self, ttft_slo=TTFT_SLO, tpot_slo=TPOT_SLO) -> float:
        return float(np.mean((self.ttft <= ttft_slo) & (self.tpot <= tpot_slo)))

    def tpot_ms(self, p=None) -> float:
        return float((np.mean(self.tpot) if p is None else np.percentile(self.tpot, p)) * 1e3)


def run_day(base: Setup, spec: Speculative, policy: str, switch: LoadSwitch | None = None,
            mean_rate: float = 14.0, peak_to_trough: float = 5.0) -> DayResult:
    """The day under ``policy``: "off", "on", or "switched" (``switch.decide`` on the mean running
    requests of the hour before, under whatever mode that hour had; speculation starts on)."""
    if policy not in ("off", "on", "switched"):
        raise ValueError(f"policy must be 'off', 'on' or 'switched', got {policy!r}")
    if policy == "switched" and switch is None:
        raise ValueError("policy 'switched' needs a LoadSwitch")
    on_setup = dataclasses.replace(base, speculative=spec)
    on, runs, modes = policy != "off", [], []
    for h in range(DAY_HOURS):
        if policy == "switched" and runs:
            on = switch.decide(runs[-1].running, on)
        modes.append(on)
        runs.append(hour_run(on_setup if on else base, h, mean_rate, peak_to_trough))
    return DayResult(policy, tuple(h for h, m in enumerate(modes) if m), np.concatenate([r.ttft for r in runs]),
                     np.concatenate([r.tpot for r in runs]), tuple(runs))


def day_figure(base: Setup, spec: Speculative, switch: LoadSwitch, mean_rate: float = 14.0,
               peak_to_trough: float = 5.0):
    """Per hour: mean running requests (left) and mean TPOT (right) for the three policies."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9.5, 3.3))
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.88, wspace=0.28)
    left, right = fig.subplots(1, 2)
    hours = np.arange(DAY_HOURS)
    for policy, color in (("off", "C7"), ("on", "C2"), ("switched", "C0")):
        d = run_day(base, spec, policy, switch, mean_rate, peak_to_trough)
        left.plot(hours, [r.running for r in d.hours], "o-", ms=3, color=color, label=policy)
        right.plot(hours, [np.mean(r.tpot) * 1e3 for r in d.hours], "o-", ms=3, color=color, label=policy)
    left.axhline(switch.off_above, color="#d62728", ls="--", lw=1, label="switch off above")
    left.set_xlabel("hour of the day")
    left.set_ylabel("running requests (mean per step)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    right.set_xlabel("hour of the day")
    right.set_ylabel("mean TPOT (ms)")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle("a day of load: speculation always off, always on, switched by running requests")
    return fig


# --- 5. the panel --------------------------------------------------------------------------------

K_OPTIONS = tuple(range(1, 9))
ALPHA_OPTIONS = (0.5, 0.6, 0.7, 0.8, 0.9)
DRAFT_COST_OPTIONS = (0.02, 0.05, 0.1, 0.2)
RATE_OPTIONS = (2, 5, 10, 15, 20, 25, 30, 33)
PANEL_DEFAULTS = dict(k=4, alpha=0.8, draft_cost=0.05, rate=10)
PANEL_WINDOW_S = 20.0          # seconds of arrivals per panel point: long enough for a queue to build


def panel_requests(rate: float) -> int:
    """Requests of one panel point: PANEL_WINDOW_S of arrivals, at least 150."""
    return max(150, round(rate * PANEL_WINDOW_S))


@lru_cache(maxsize=2048)
@memo.shipped("ch08.poisson_point", "course/ch08.py", "course/panel.py")
def poisson_point(setup: Setup, rate: float) -> dict:
    """``panel_requests(rate)`` Poisson arrivals at ``rate`` (chapter 04's lengths) on ``setup``:
    TPOT mean and p99, TTFT p99, goodput (req/s within TTFT_SLO and TPOT_SLO) and SLO attainment."""
    from sim import workload
    w = workload.poisson(rate, panel_requests(rate), SPEC_INPUT, SPEC_OUTPUT)
    r = run(setup, w)
    s = summarize(r, TTFT_SLO, TPOT_SLO)
    out = {k: s[k] for k in ("tpot_mean", "tpot_p99", "ttft_p99", "goodput", "slo_ok")}
    out["running"] = float(np.sum(r.steps.decoders * r.steps.duration) / np.sum(r.steps.duration))
    return out


def panel_answer(base: Setup, k: int, alpha: float, draft_cost: float, rate: float) -> dict:
    spec = Speculative(k=k, alpha=alpha, draft_cost=draft_cost)
    return {"spec": spec, "off": poisson_point(base, rate),
            "on": poisson_point(dataclasses.replace(base, speculative=spec), rate)}


def panel_rows(a: dict, rate: float) -> list[tuple[str, str]]:
    spec, off, on = a["spec"], a["off"], a["on"]
    k, s = best_k(spec.alpha, spec.draft_cost)
    return [
        ("每步期望产出 token（公式）", f"{spec.tokens_per_step():.2f}"),
        ("低负载加速比（公式）", f"{spec.speedup():.2f}x（这个 alpha 与草稿开销下最好的 k = {k}，{s:.2f}x）"),
        (f"{rate:g} req/s：平均 TPOT 关 / 开", f"{off['tpot_mean'] * 1e3:.1f} ms / {on['tpot_mean'] * 1e3:.1f} ms"),
        (f"{rate:g} req/s：P99 TPOT 关 / 开", f"{off['tpot_p99'] * 1e3:.1f} ms / {on['tpot_p99'] * 1e3:.1f} ms"),
        (f"{rate:g} req/s：运行中的请求（每步平均）关 / 开", f"{off['running']:.0f} / {on['running']:.0f}"),
        (f"{rate:g} req/s：goodput 关 / 开", f"{off['goodput']:.1f} / {on['goodput']:.1f} req/s"
                                             f"（达标 {off['slo_ok']:.0%} / {on['slo_ok']:.0%}）"),
    ]


def panel_chart(base: Setup, spec: Speculative, running: float) -> plots.Chart:
    """Step-level speedup against decode batch for this draft (arithmetic: instant), 1x, and the
    simulated load's running requests with speculation on (where on the curve the load sits)."""
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    c = plots.Chart(1, width=560, height=240, title=f"k={spec.k}, alpha={spec.alpha:g}, draft cost={spec.draft_cost:g}")
    c.add(0, "step-level speedup", batches, [step_speedup(base, spec, b) for b in batches], color="#1f77b4")
    c.hline(0, "1x", 1.0, color="#d62728")
    c.vline(0, "running requests at this load (on)", max(1.0, running), color="#7f7f7f")
    c.axes(0, logx=True, xlabel="decode batch (log)", ylabel="TPOT speedup")
    return c


class SpecLoadPanel:
    """k, alpha, draft cost and Poisson load (req/s) -> TPOT and goodput with speculation off and
    on, simulated and cached; the chart is the step-level speedup against batch (arithmetic) with
    the load's running requests marked. Each move answers in the caller (no worker thread): its
    runs come from the shipped table (``course.memo``) or run once and are cached."""

    def __init__(self, base: Setup, **values):
        import ipywidgets as w
        v = {**PANEL_DEFAULTS, **values}
        style, layout = {"description_width": "150px"}, w.Layout(width="520px")
        opts = dict(k=("草稿长度 k", K_OPTIONS), alpha=("接受率 alpha", ALPHA_OPTIONS),
                    draft_cost=("草稿一次的相对开销", DRAFT_COST_OPTIONS), rate=("负载（req/s）", RATE_OPTIONS))
        self.base = base
        self.controls = {name: w.SelectionSlider(options=o, value=v[name], description=d, continuous_update=False,
                                                 style=style, layout=layout) for name, (d, o) in opts.items()}
        self.table, self.chart = w.HTML(), w.HTML()
        self.widget = w.VBox(list(self.controls.values()) + [self.table, self.chart])
        for c in self.controls.values():
            c.observe(lambda _c: self.update(), names="value")
        self.update()

    def values(self) -> dict:
        return {name: c.value for name, c in self.controls.items()}

    def update(self) -> None:
        start = time.perf_counter()
        v = self.values()
        self.answer = panel_answer(self.base, **v)
        self.rows = panel_rows(self.answer, v["rate"])
        self.table.value = rows_html(self.rows)
        self.figure = panel_chart(self.base, self.answer["spec"], self.answer["on"]["running"])
        self.chart.value = self.figure.svg()
        self.last_update_s = time.perf_counter() - start

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def spec_load_panel(base: Setup | None = None, **values) -> SpecLoadPanel:
    return SpecLoadPanel(base_setup() if base is None else base, **values)
