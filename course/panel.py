"""Interactive panels for the chapter notebooks: pure computations, and the widgets that drive them.

Two panels; every figure is ``sim.plan``'s or a simulation's, computed live or read from the table
``python -m course.memo build 02`` computed with the same code (``course.memo``: the positions one
or two moves away from the chapter's, and every instance choice; a table made by other code is never
read). Where a position needs a live search (0.3-6 s), chapter 02's panel first shows a provisional
answer, marked as one, from the same search with shorter trials (``course.estimate``), and replaces
it with the plan's when the search ends; a newer move stops an older move's searches.

* ``design_panel()`` (chapter 02; the widgets are ``course.live``'s): choices of model, GPU, TP and weight / KV dtype (``sim.presets``,
  the chapter's instance by default) and sliders for QPS, prompt and output length, MFU, GPU price
  and the TTFT / TPOT SLOs; shows the sizing (the figures ``sim.plan`` gives), the hand calculation
  behind it (``course.explain``), a "what changed" line, and p99 TTFT / TPOT against the rate.
* ``rate_panel()`` (chapter 01): the same instance choice and a slider over the offered rate; shows
  how the TTFT and TPOT distributions of one instance move.

The numbers come from functions with no widgets in them (``design``, ``latency_curve``,
``distribution``), cached on their arguments, so a slider change only recomputes what it changed.
Every figure of the sizing is ``sim.plan``'s (``instance`` calls it once per instance, request shape
and SLOs; QPS and price only ``Plan.resized`` it, without simulating): the rate, the bound (``ttft``
included), the low-load times, the analytic ceilings (``sim.bound.ceilings``), the reason a choice
has no plan; this module formats them. ``python -m sim plan`` / ``sweep`` give the same figures for
the same option (``sim.plan``'s default search: steady-state trials, ``sim.capacity``); the latency
curve draws 1500-request runs around the plan's answer. The charts are light SVG
(``course.plots.Chart``): a matplotlib PNG would take longer to render than the whole update may. ``benchmarks/bench_panel.py`` times random
slider moves through ``course.live``'s ``DesignPanel`` / ``RatePanel``, the code the widgets call.

Instances: the chapter's (Llama-3-70B, FP8 weights and KV, 8 x H100) is ``chapter_setup()``, its
own rounded figures (70.6B parameters); any other choice is ``sim.presets.instance`` with the
chapter's explicit factors (the handbook's step rule: ``step_overhead`` 1.5 ms, ``bandwidth_util``
1.0, MFU from its slider). A choice that cannot run (weights that do not fit, a dtype the GPU lacks,
a TP that does not divide the heads, a request larger than the KV cache: the presets' and
``sim.validate.check_lengths_fit``'s checks) shows its reason.
"""

from __future__ import annotations

import contextvars
import html
import io
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from course import memo
from course.explain import explain_zh, fmt_rate
from sim import bound, capacity, planning, presets
from sim.metrics import meets_slos, percentile, summarize
from sim.setup import Setup
from sim.simulate import simulate
from sim.validate import check_lengths_fit

# The chapter's service: a 70B dense model, FP8 weights and KV, one instance = 8 x H100 with TP=8.
KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 1          # K and V x 80 layers x 8 KV heads x 128 dims x 1 byte
GPUS_PER_INSTANCE = 8
TTFT_SLO_S = 2.0
TPOT_SLO_S = 0.05
HEADROOM = 1.3
GPU_HOUR_USD = 2.5
QPS, INPUT_LEN, OUTPUT_LEN, MFU = 200, 2000, 500, 0.4
STEP_OVERHEAD_S, BANDWIDTH_UTIL = 1.5e-3, 1.0      # the chapter's explicit factors

# The instance choices (sim.presets names) and the chapter's.
MODEL, GPU, TP, WEIGHT_DTYPE, KV_DTYPE = "llama-3-70b", "h100-sxm", 8, "fp8", "fp8"
MODEL_OPTIONS = ("llama-3-8b", "llama-3-70b", "llama-3.1-405b", "qwen2.5-7b", "qwen2.5-72b", "mixtral-8x7b",
                 "deepseek-v3")
GPU_OPTIONS = ("h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x")
TP_OPTIONS = (1, 2, 4, 8)
DTYPE_OPTIONS = ("bf16", "fp8")

# Slider positions. Lengths are roughly log-spaced and include the chapter's 2000 and 500.
QPS_OPTIONS = (10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000)
INPUT_OPTIONS = (128, 256, 512, 1024, 2000, 4096, 8192, 16384, 32768)
OUTPUT_OPTIONS = (16, 32, 64, 128, 256, 500, 1024, 2048, 4096)
TTFT_SLO_OPTIONS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)             # seconds
TPOT_SLO_OPTIONS = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15)        # seconds
MFU_RANGE = (0.1, 0.8, 0.05)
PRICE_RANGE = (0.5, 8.0, 0.25)

# The curve draws runs of the handbook's 1500 requests per point, every point alike (the search's own
# run at its answer is a steady-state trial tens of times longer: its tail would not be comparable
# with its neighbours', and seven such runs would not fit the panel's time budget). A 1500-request
# run overstates capacity (chapter 01, section 4), so the curve crosses the SLO line a little to the
# right of the marked rate, which the steady-state search chose; the panel's note says so.
CURVE_REQUESTS = capacity.POISSON_REQUESTS
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25)   # of the chosen rate


def chapter_setup(mfu: float = MFU) -> Setup:
    """The chapter's instance: 70.6B params, FP8, 8 x H100 (80 GB, 3.35 TB/s, 1979 TFLOP/s FP8)."""
    return Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=KV_BYTES_PER_TOKEN,
                 kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / KV_BYTES_PER_TOKEN),
                 peak_flops=8 * 1979e12, bandwidth=8 * 3.35e12, mfu=mfu, step_overhead=STEP_OVERHEAD_S,
                 max_num_batched_tokens=8192, max_num_seqs=512)


@dataclass(frozen=True)
class Hardware:
    """One instance choice: a model served with tensor parallelism ``tp`` on ``gpu`` GPUs."""

    model: str = MODEL
    gpu: str = GPU
    tp: int = TP
    weight_dtype: str = WEIGHT_DTYPE
    kv_dtype: str = KV_DTYPE

    @property
    def is_chapters(self) -> bool:
        return self == Hardware()

    def label(self) -> str:
        """The instance as every command names it (``sim.presets.describe``)."""
        return presets.describe(self.model, self.gpu, self.tp, self.weight_dtype, self.kv_dtype)


CHAPTER = Hardware()


@lru_cache(maxsize=256)
def instance_setup(hw: Hardware = CHAPTER, mfu: float = MFU) -> Setup:
    """The ``Setup`` for a choice: the chapter's own for its instance, else ``presets.instance`` with
    the chapter's explicit factors. Raises ValueError (with the reason) for a choice that cannot run."""
    if hw.is_chapters:
        return chapter_setup(mfu)
    return presets.instance(hw.model, hw.gpu, tp=hw.tp, weight_dtype=hw.weight_dtype, kv_dtype=hw.kv_dtype,
                            mfu=mfu, step_overhead=STEP_OVERHEAD_S, bandwidth_util=BANDWIDTH_UTIL)


def _setup_or_reason(hw: Hardware, mfu: float, input_len: int = 1, output_len: int = 1):
    """(setup, "") or (None, reason in Chinese) for a choice and a request shape: the preset's own
    error, or ``sim.validate.check_lengths_fit``'s (the rule ``sim.plan`` applies, paged KV included)."""
    try:
        setup = instance_setup(hw, mfu)
    except ValueError as e:
        return None, f"这个组合无法部署：{e}"
    try:
        check_lengths_fit(setup, input_len, output_len)
    except ValueError as e:
        return None, (f"一个请求要 {input_len + output_len:,} token 的 KV，而这个实例的 KV Cache 只有 "
                      f"{setup.kv_capacity_tokens:,} token，单个请求都放不下：换更大的 TP、更小的 KV dtype "
                      f"或更短的请求（{e}）")
    return setup, ""


# --- Pure computations -------------------------------------------------------------------------

@dataclass(frozen=True)
class Design:
    """What the chapter-02 panel shows for one position of its controls: ``sim.plan``'s figures
    (``plan``, the ``sim.Plan`` they come from, resized to the position's QPS and price).

    When no rate meets the SLOs (or the choice cannot run) ``feasible`` is False, the counts and
    costs are None, ``bound`` is "infeasible" (or "unbounded": the SLOs never bind), ``reason``
    says why and the low-load times are those of a lone request (NaN when there is none).
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
    hardware: Hardware = CHAPTER
    ttft_slo: float = TTFT_SLO_S
    tpot_slo: float = TPOT_SLO_S
    ceilings: bound.Ceilings | None = None      # the analytic ceilings (sim.bound.ceilings)
    plan: planning.Plan | None = field(default=None, compare=False, repr=False)
    estimated: bool = False                     # the rate is ``course.estimate``'s, not the search's


@dataclass(frozen=True)
class Planned:
    """``sim.plan``'s answer for one instance, request shape and SLOs: the ``Plan`` (at the chapter's
    QPS and price; ``design`` resizes it), or the error it raised (``InfeasibleError``: no rate meets
    the SLOs; ``BracketError``: the SLOs never bind)."""

    plan: planning.Plan | None
    error: ValueError | None = None


def _without_run(answer: Planned) -> Planned:
    """What the shipped table keeps of an answer: the plan without its run at the rate (a whole
    ``SimResult``, which the panel never reads)."""
    return answer if answer.plan is None else Planned(replace(answer.plan, run_at_rate=None), answer.error)


INSTANCE_CACHE = 4096        # answers ``instance`` keeps in memory (a plan without its run: a few kB)
_SEARCHED: set = set()       # the calls ``design`` has had ``instance`` answer since its cache was last emptied
_STOP = contextvars.ContextVar("stop", default=None)   # the searches' stop() (see while_current)


@lru_cache(maxsize=INSTANCE_CACHE)
@memo.shipped("ch02.instance", "course/panel.py", strip=_without_run)
def instance(input_len: int, output_len: int, mfu: float, hw: Hardware = CHAPTER,
             ttft_slo: float = TTFT_SLO_S, tpot_slo: float = TPOT_SLO_S) -> Planned:
    """``sim.plan`` for the instance (its search, low-load run and bound), cached: only the controls
    that change the instance, the request shape or the SLOs run it again; QPS and price resize it.
    The positions of ``course.panel_grids.chapter_02`` are answered from the shipped table
    (``course.memo``: the same figures, computed by ``python -m course.memo build 02`` for the code
    as it is; any other position, or other code, is computed live). Raises ValueError for a choice
    that cannot run (``_setup_or_reason`` says why), and ``sim.capacity.Cancelled`` when the
    panel's move it was computing for is superseded (``_STOP``: the search's ``stop``)."""
    setup = instance_setup(hw, mfu)
    try:
        answer = Planned(planning.plan(QPS, setup, input_len, output_len, ttft_slo, tpot_slo,
                                       gpus_per_instance=hw.tp, headroom=HEADROOM, gpu_hour_usd=GPU_HOUR_USD,
                                       stop=_STOP.get()))
    except (planning.InfeasibleError, planning.BracketError) as e:
        answer = Planned(None, e)
    return answer


def ready(input_len: int, output_len: int, mfu: float, hw: Hardware = CHAPTER, ttft_slo: float = TTFT_SLO_S,
          tpot_slo: float = TPOT_SLO_S) -> bool:
    """Whether ``design`` answers this position at once: the choice cannot run (the reason is all
    there is to show), the shipped table holds it, or this session has computed it (``instance``'s
    cache). False means a capacity search (0.3-6 s on a laptop core)."""
    if _setup_or_reason(hw, mfu, input_len, output_len)[0] is None:
        return True
    args = (input_len, output_len, mfu, hw, ttft_slo, tpot_slo)
    return args in _SEARCHED or instance.peek(*args) is not memo.MISSING


@lru_cache(maxsize=1024)
def design(qps: float = QPS, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
           mfu: float = MFU, gpu_hour_usd: float = GPU_HOUR_USD, hw: Hardware = CHAPTER,
           ttft_slo: float = TTFT_SLO_S, tpot_slo: float = TPOT_SLO_S) -> Design:
    """Size the service for one position of the controls (cached on the arguments): ``sim.plan``'s
    figures, formatted; nothing is computed here but the Chinese reason when there is no plan."""
    controls = (qps, input_len, output_len, mfu, gpu_hour_usd)
    common = dict(hardware=hw, ttft_slo=ttft_slo, tpot_slo=tpot_slo)
    setup, why = _setup_or_reason(hw, mfu, input_len, output_len)
    if setup is None:
        return Design(*controls, False, 0.0, None, None, None, None, None, "infeasible", math.nan, math.nan,
                      why, (why,), **common)
    answer = instance(input_len, output_len, mfu, hw, ttft_slo, tpot_slo)
    if len(_SEARCHED) >= INSTANCE_CACHE:          # (both caches empty together: ready() never lies)
        _SEARCHED.clear()
        instance.cache_clear()
    _SEARCHED.add((input_len, output_len, mfu, hw, ttft_slo, tpot_slo))
    if answer.plan is not None:
        p = answer.plan.resized(qps=qps, gpu_hour_usd=gpu_hour_usd)
        lines = explain_zh(setup, input_len, output_len, low_load_ttft_s=p.low_load_ttft_s,
                           low_load_tpot_s=p.low_load_tpot_s, rate_per_instance=p.rate_per_instance,
                           bound=p.bound, ttft_slo=ttft_slo, tpot_slo=tpot_slo)
        return Design(*controls, True, p.rate_per_instance, p.instances_no_headroom, p.instances, p.gpus,
                      p.usd_per_hour, p.usd_per_million_output_tokens, p.bound, p.low_load_ttft_s,
                      p.low_load_tpot_s, "", tuple(lines), ceilings=p.ceilings, plan=p, **common)
    ceil = bound.ceilings(setup, input_len, output_len)
    if isinstance(answer.error, planning.BracketError):
        why = (f"SLO 约束不住这个实例：压测的 {capacity.POISSON_REQUESTS} 个请求即使几乎同时到达，也都满足 SLO，"
               "找不到最大速率（sim.plan 对此报 BracketError）。收紧 SLO 或加长请求再看。")
        return Design(*controls, False, 0.0, None, None, None, None, None, "unbounded", math.nan, math.nan,
                      why, (why,), ceilings=ceil, **common)
    ttft, tpot = answer.error.ttft_s, answer.error.tpot_s          # sim.plan's lone request
    misses = []
    if ttft > ttft_slo:
        misses.append(f"单个请求的 TTFT 已是 {ttft:.2f} s，超过 {ttft_slo:g} s")
    if tpot > tpot_slo:
        misses.append(f"单个请求的 TPOT 已是 {tpot * 1e3:.1f} ms，超过 {tpot_slo * 1e3:g} ms")
    reason = "；".join(misses) or "单个请求能满足 SLO，但稍有负载就有超过 1% 的请求超标"
    lines = explain_zh(setup, input_len, output_len, low_load_ttft_s=ttft, low_load_tpot_s=tpot,
                       rate_per_instance=0.0, bound="infeasible", ttft_slo=ttft_slo, tpot_slo=tpot_slo)
    return Design(*controls, False, 0.0, None, None, None, None, None, "infeasible", ttft, tpot, reason,
                  tuple(lines), ceilings=ceil, **common)


def mfu_options() -> tuple[float, ...]:
    """Every MFU slider position, rounded to its step."""
    lo, hi, step = MFU_RANGE
    return tuple(round(lo + i * step, 2) for i in range(round((hi - lo) / step) + 1))


BOUND_SHORT = {"prefill_compute": "算力", "decode_bandwidth": "显存带宽", "kv_capacity": "KV 容量",
               "max_num_seqs": "并发上限", "ttft": "TTFT SLO", "infeasible": "无解",
               "unbounded": "SLO 约束不住"}
CEILING_ZH = {"compute": "算力上限", "bandwidth": "带宽上限", "kv": "KV 上限"}
CONTROL_ZH = {"qps": "峰值 QPS", "input_len": "提示词长度", "output_len": "输出长度", "mfu": "MFU",
              "gpu_hour_usd": "每卡每小时价格", "ttft_slo": "TTFT SLO", "tpot_slo": "TPOT SLO",
              "model": "模型", "gpu": "GPU", "tp": "TP", "weight_dtype": "权重 dtype", "kv_dtype": "KV dtype"}


def _pct(a: float, b: float) -> str:
    return f"{(b / a - 1):+.0%}" if a else "—"


def what_changed(before: Design | None, after: Design, control: str | None = None) -> str:
    """One Chinese line: what the last move changed (the rate, the binding bound, the ceiling that
    moved most, GPUs and cost), so the learner reads the effect, not only the new numbers."""
    if before is None or before == after:
        return "移动任一控件，这里会说明它改变了什么。"
    what = CONTROL_ZH.get(control, "设置") if control else "设置"
    parts = []
    if not after.feasible:
        return f"{what}改变后无解：{after.reason}"
    if not before.feasible:
        parts.append(f"由无解变为可行：单实例 {fmt_rate(after.rate_per_instance)} req/s")
    elif before.rate_per_instance != after.rate_per_instance:
        parts.append(f"单实例速率 {fmt_rate(before.rate_per_instance)} → {fmt_rate(after.rate_per_instance)} req/s"
                     f"（{_pct(before.rate_per_instance, after.rate_per_instance)}）")
    if before.feasible and before.bound != after.bound:
        parts.append(f"瓶颈由{BOUND_SHORT.get(before.bound, before.bound)}变为{BOUND_SHORT.get(after.bound, after.bound)}")
    elif after.feasible:
        parts.append(f"瓶颈仍是{BOUND_SHORT.get(after.bound, after.bound)}")
    if before.ceilings and after.ceilings:
        moved = [(abs(b / a - 1), name, a, b)
                 for name, a, b in zip(after.ceilings._fields, before.ceilings, after.ceilings) if a and b]
        if moved and max(moved)[0] > 0.005:
            _, name, a, b = max(moved)
            parts.append(f"{CEILING_ZH[name]} {fmt_rate(a)} → {fmt_rate(b)} req/s（{_pct(a, b)}）")
    if before.gpus is not None and after.gpus is not None and before.gpus != after.gpus:
        parts.append(f"GPU {before.gpus} → {after.gpus} 张")
    if before.usd_per_hour is not None and after.usd_per_hour is not None and before.usd_per_hour != after.usd_per_hour:
        parts.append(f"每小时 ${before.usd_per_hour:,.0f} → ${after.usd_per_hour:,.0f}")
    return f"{what}：" + "；".join(parts) + "。"


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
                      tpot_slo: float = TPOT_SLO_S, known: dict | None = None) -> LatencyCurve:
    """Simulate ``num_requests`` Poisson requests at each rate and take the percentiles (``known``:
    rate -> a result of that very run, reused instead of simulating it again)."""
    rows = []
    for rate in rates:
        result = (known or {}).get(rate)
        if result is None:
            result = simulate(setup, float(rate), num_requests, input_len, output_len, seed)
        ttft, tpot = result.ttft, result.tpot
        rows.append((percentile(ttft, 50), percentile(ttft, 99), percentile(tpot, 50),
                     percentile(tpot, 99), float(meets_slos(result, ttft_slo, tpot_slo).mean())))
    cols = np.array(rows, dtype=float).reshape(-1, 5).T
    return LatencyCurve(np.asarray(rates, dtype=float), *cols, num_requests=num_requests)


@lru_cache(maxsize=512)
@memo.shipped("ch02.latency_curve", "course/panel.py")
def latency_curve(input_len: int, output_len: int, mfu: float, hw: Hardware = CHAPTER,
                  ttft_slo: float = TTFT_SLO_S, tpot_slo: float = TPOT_SLO_S) -> LatencyCurve | None:
    """The chapter-02 panel's curve: rates at ``CURVE_FRACTIONS`` of the chosen per-instance rate
    (the point at 1.0 is the search's run). When no rate meets the SLOs the fractions are taken of
    the compute ceiling instead; None when the instance cannot be built."""
    setup, _ = _setup_or_reason(hw, mfu, input_len, output_len)
    if setup is None:
        return None
    p = instance(input_len, output_len, mfu, hw, ttft_slo, tpot_slo).plan
    rate = bound.ceilings(setup, input_len, output_len).compute if p is None else p.rate_per_instance
    rates = tuple(rate * f for f in CURVE_FRACTIONS)
    return latency_curve_for(setup, rates, input_len, output_len, num_requests=CURVE_REQUESTS,
                             ttft_slo=ttft_slo, tpot_slo=tpot_slo)


@dataclass(frozen=True)
class Distribution:
    """Per-request TTFT and TPOT (seconds) of one run, with its summary figures and the instance's
    compute ceiling (req/s of this request shape, ``sim.bound.ceilings``) to read the rate against."""

    rate: float
    ttft: np.ndarray
    tpot: np.ndarray
    stats: dict
    compute_ceiling: float = math.nan

    @property
    def load(self) -> float:
        """The offered rate as a fraction of the compute ceiling."""
        return self.rate / self.compute_ceiling


@lru_cache(maxsize=256)
def distribution(rate: float, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
                 mfu: float = MFU, num_requests: int = 1500, seed: int = 0, hw: Hardware = CHAPTER) -> Distribution:
    """One run of the instance at ``rate``: the spread the chapter-01 slider shows. Raises
    ValueError (with the reason) for a choice that cannot run."""
    setup, why = _setup_or_reason(hw, mfu, input_len, output_len)
    if setup is None:
        raise ValueError(why)
    result = simulate(setup, float(rate), num_requests, input_len, output_len, seed)
    s = summarize(result, TTFT_SLO_S, TPOT_SLO_S)
    stats = {k: s[k] for k in ("ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99",
                               "slo_ok", "goodput")}
    stats["throughput"] = s["request_rate"]
    return Distribution(float(rate), result.ttft, result.tpot, stats,
                        bound.ceilings(setup, input_len, output_len).compute)


def rate_changed(before: Distribution | None, after: Distribution, control: str | None = None) -> str:
    """One Chinese line for the chapter-01 panel: what the last move did to the run shown (the rate
    against the instance's ceiling, p99 TTFT / TPOT, the share within the SLOs)."""
    if before is None or before is after:
        return "移动滑块或换一个实例，这里会说明它改变了什么（灰色虚线是上一次的分布）。"
    what = "到达速率" if control in (None, "rate") else CONTROL_ZH.get(control, "设置")
    if before.rate == after.rate:
        rate = f"同样 {after.rate:g} req/s"
    else:
        rate = f"{before.rate:g} → {after.rate:g} req/s"
    if fmt_rate(before.compute_ceiling) == fmt_rate(after.compute_ceiling):
        ceiling = f"是算力上限（{fmt_rate(after.compute_ceiling)} req/s）的 {before.load:.0%} → {after.load:.0%}"
    else:
        ceiling = (f"是算力上限的 {before.load:.0%} → {after.load:.0%}"
                   f"（上限 {fmt_rate(before.compute_ceiling)} → {fmt_rate(after.compute_ceiling)} req/s）")
    return (f"{what}：{rate}，{ceiling}；"
            f"P99 TTFT {_fmt_s(before.stats['ttft_p99'])} → {_fmt_s(after.stats['ttft_p99'])}，"
            f"P99 TPOT {_fmt_s(before.stats['tpot_p99'])} → {_fmt_s(after.stats['tpot_p99'])}；"
            f"满足 SLO {before.stats['slo_ok']:.1%} → {after.stats['slo_ok']:.1%}。")


# --- Rendering helpers -------------------------------------------------------------------------

def figure_png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes (for an ``ipywidgets.Image``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _fmt_s(seconds: float) -> str:
    if seconds != seconds:
        return "—"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


BOUND_LABEL = {
    "prefill_compute": "算力（prefill_compute）",
    "decode_bandwidth": "显存带宽（decode_bandwidth）",
    "kv_capacity": "KV 容量（kv_capacity）",
    "max_num_seqs": "并发上限（max_num_seqs）",
    "ttft": "TTFT SLO（长提示词）",
    "unbounded": "SLO 约束不住（压测请求全部达标）",
    "infeasible": "无解（单实例满足不了 SLO）",
    "estimating": "待定（精确的搜索算完后给出）",
}


def design_rows(d: Design) -> list[tuple[str, str]]:
    """The panel's table: (label in Chinese, value) for a ``Design``."""
    about = "约 " if d.estimated else ""          # an estimate's figures say so
    rows = [
        ("低负载 TTFT / TPOT（中位数）", f"{_fmt_s(d.low_load_ttft_s)} / {_fmt_s(d.low_load_tpot_s)}"),
        ("单实例满足 SLO 的最大速率", (f"{about}{fmt_rate(d.rate_per_instance)} req/s" + ("（估算，精确值计算中）" if d.estimated else ""))
         if d.feasible else "—"),
    ]
    if d.feasible:
        rows += [
            ("实例数（不加余量 / 加 30% 余量）", f"{about}{d.instances_no_headroom} / {d.instances}"),
            ("GPU 数", f"{about}{d.gpus} 张 {presets.gpu(d.hardware.gpu).name}"),
            ("每小时成本", f"{about}${d.usd_per_hour:,.0f}"),
            ("每百万输出 token 成本", f"{about}${d.usd_per_million_output_tokens:.2f}"),
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


RATE_OPTIONS = (1, 2, 4, 6, 8, 10, 12, 14, 15, 16, 17, 18, 19, 20, 22, 25)


def rate_options(hw: Hardware = CHAPTER, mfu: float = MFU, input_len: int = INPUT_LEN,
                 output_len: int = OUTPUT_LEN, keep: float | None = None) -> tuple:
    """The rate slider's positions for an instance: the chapter's, scaled by its compute ceiling
    (3 significant digits), so the slider spans the same share of any instance's range; ``keep``
    (the rate shown before) is added when missing, so changing the instance keeps the offered
    rate and the learner sees the same traffic on the other instance. The chapter's unchanged."""
    options = RATE_OPTIONS
    if not hw.is_chapters:
        setup, _ = _setup_or_reason(hw, mfu, input_len, output_len)
        if setup is not None:
            scale = (bound.ceilings(setup, input_len, output_len).compute
                     / bound.ceilings(chapter_setup(mfu), input_len, output_len).compute)
            options = tuple(dict.fromkeys(float(f"{r * scale:.3g}") for r in RATE_OPTIONS))
    if keep is not None and keep not in options:
        options = tuple(sorted((*options, keep)))
    return options


def while_current(wanted, f, *args):
    """``f(*args)`` with every search it runs (``instance``, ``estimate.quick_rate``) stopping, by raising
    ``sim.capacity.Cancelled``, as soon as ``wanted()`` turns False: the panel's learner has moved
    on to a position that needs another search, so the CPU goes to that one."""
    token = _STOP.set(lambda: not wanted())
    try:
        return f(*args)
    finally:
        _STOP.reset(token)


def design_panel(*, background: bool = True):
    """Build chapter 02's panel (``course.live.DesignPanel``) at the chapter's values (200 QPS,
    2000 / 500 tokens, MFU 0.4)."""
    from course.live import DesignPanel
    return DesignPanel(background=background)


def rate_panel(**kwargs):
    """Build chapter 01's rate slider panel (``course.live.RatePanel``)."""
    from course.live import RatePanel
    return RatePanel(**kwargs)


def clear_caches() -> None:
    """Forget every cached computation (tests and benchmarks use it to time cold updates)."""
    from course import estimate
    for f in (instance_setup, instance, estimate.quick_rate, design, latency_curve, distribution):
        f.cache_clear()
    _SEARCHED.clear()


def warm_up() -> None:
    """Compile or load the engine's compiled loops now (the engine does it on first use)."""
    from sim import engine
    engine.compiled()
