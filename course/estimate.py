"""Chapter 02's provisional answer: what its panel shows, marked as an estimate, while the exact
search for a position off its shipped table runs (0.3-6 s).

The estimate is the plan's own search (``sim.capacity.search``, the steady-state trials of
``sim.plan``) made cheaper in two ways: trials of ``QUICK_WINDOWS`` = 20 windows instead of 200, and
a last bracket of ``QUICK_REL_TOL`` = 5% instead of 0.1%. Where loose SLOs make a window long and the
rate is high (a 128-token chat with a 10 s TTFT SLO: a window of 16 s at 400 req/s), 20 windows are
still a hundred thousand requests; there the windows drop (to no fewer than 3) until a trial at the
analytic ceiling stays within ``QUICK_MAX_REQUESTS``. How far the estimate lands from the exact
answer is measured, not assumed: ``python benchmarks/bench_panel.py --chapters --estimates 40``.

Kept apart from ``course.panel`` on purpose: the shipped table is fingerprinted by the code that
computes its answers (``course/panel.py``), which this is not.
"""

from __future__ import annotations

import math
from functools import lru_cache

from course.explain import fmt_rate
from course.panel import (CHAPTER, CONTROL_ZH, GPU_HOUR_USD, HEADROOM, INPUT_LEN, INSTANCE_CACHE, MFU, OUTPUT_LEN, QPS,
                          TPOT_SLO_S, TTFT_SLO_S, Design, Hardware, _setup_or_reason, _STOP, instance_setup)
from sim import bound, capacity, planning
from sim.simulate import simulate

QUICK_WINDOWS, QUICK_REL_TOL = 20, 0.05
QUICK_MAX_REQUESTS = 40_000        # a trial at the analytic ceiling, at most (windows >= 3 regardless)


def quick_windows(setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float) -> int:
    """The quick trials' length in windows: ``QUICK_WINDOWS``, fewer (at least 3) where that many
    windows at the analytic ceiling (``sim.capacity.throughput_bound``, where the search starts and
    above which it rarely goes) would be more than ``QUICK_MAX_REQUESTS`` requests."""
    ceiling = capacity.throughput_bound(setup, input_len, output_len)
    _, window = capacity.steady_trial(setup, input_len, output_len, ttft_slo, tpot_slo, ceiling, windows=3)
    return max(3, min(QUICK_WINDOWS, int(QUICK_MAX_REQUESTS // max(1.0, window * ceiling))))


@lru_cache(maxsize=INSTANCE_CACHE)
def quick_rate(input_len: int, output_len: int, mfu: float, hw: Hardware = CHAPTER, ttft_slo: float = TTFT_SLO_S,
               tpot_slo: float = TPOT_SLO_S) -> float | None:
    """The largest rate within the SLOs by the quick search (``quick_windows``, ``QUICK_REL_TOL``);
    None where there is none to show: the choice cannot run, a lone request already misses an SLO
    (``sim.plan`` says so at once), or the SLOs never bind. Raises ``sim.capacity.Cancelled`` when
    ``course.panel.while_current`` says its position is no longer wanted."""
    setup, _ = _setup_or_reason(hw, mfu, input_len, output_len)
    if setup is None:
        return None
    alone = simulate(setup, 1.0, 1, input_len, output_len)
    if alone.ttft[0] > ttft_slo or alone.tpot[0] > tpot_slo:
        return None
    windows = quick_windows(setup, input_len, output_len, ttft_slo, tpot_slo)
    try:
        rate, _ = capacity.search(setup, input_len, output_len, ttft_slo, tpot_slo, windows=windows,
                                  rel_tol=QUICK_REL_TOL, stop=_STOP.get())
    except capacity.BracketError:
        return None
    return rate or None


def estimated_design(qps: float = QPS, input_len: int = INPUT_LEN, output_len: int = OUTPUT_LEN,
                     mfu: float = MFU, gpu_hour_usd: float = GPU_HOUR_USD, hw: Hardware = CHAPTER,
                     ttft_slo: float = TTFT_SLO_S, tpot_slo: float = TPOT_SLO_S) -> Design | None:
    """The panel's provisional figures while a search runs (``course.panel.ready`` is False):
    ``quick_rate``, the instances, GPUs and cost ``sim.plan``'s arithmetic gives for it
    (``planning.size``) and the analytic ceilings, marked ``estimated``; no bound and no low-load
    times (those come with the plan). None where ``quick_rate`` is."""
    rate = quick_rate(input_len, output_len, mfu, hw, ttft_slo, tpot_slo)
    if rate is None:
        return None
    setup = instance_setup(hw, mfu)
    sized = planning.size(qps, rate, output_len, gpus_per_instance=hw.tp, headroom=HEADROOM, gpu_hour_usd=gpu_hour_usd)
    windows = quick_windows(setup, input_len, output_len, ttft_slo, tpot_slo)
    note = (f"这是快速估算：单实例速率 {fmt_rate(rate)} req/s 来自同一个稳态搜索，但每次试探只压 {windows} 个窗口"
            f"（精确值用 {capacity.STEADY_WINDOWS} 个）、最后的区间放宽到 {QUICK_REL_TOL:.0%}，实例数和成本按它换算。"
            "精确的搜索正在后台进行，算完会替换这里的数字，并给出瓶颈、低负载延迟和延迟曲线。")
    return Design(qps, input_len, output_len, mfu, gpu_hour_usd, True, rate, sized.instances_no_headroom,
                  sized.instances, sized.gpus, sized.usd_per_hour, sized.usd_per_million_output_tokens, "estimating",
                  math.nan, math.nan, "", (note,), hardware=hw, ttft_slo=ttft_slo, tpot_slo=tpot_slo,
                  ceilings=bound.ceilings(setup, input_len, output_len), estimated=True)


def estimate_changed(before: Design | None, guess: Design, control: str | None = None) -> str:
    """The "what changed" line while the figures are ``estimated_design``'s (Chinese)."""
    what = CONTROL_ZH.get(control, "设置") if control else "设置"
    was = (f"（上次算出的精确值是 {fmt_rate(before.rate_per_instance)} req/s）"
           if before is not None and before.feasible else "")
    return (f"{what}：单实例速率估算约 {fmt_rate(guess.rate_per_instance)} req/s{was}、约 {guess.gpus} 张 GPU；"
            "精确值计算中。")
