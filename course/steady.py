"""Chapter 01, section 4: why a 1500-request trial and a steady-state trial disagree.

``steady_check`` runs the steady-state trial ``sim.capacity`` judges a rate by (``steady_trial``:
about 200 windows, a window being the longer of the most time a passing request spends in the
instance and the time arrivals take to fill its largest batch) and reads it two ways: its first
``short`` requests alone (the same arrivals as the handbook's 1500-request trial, since the
same seed draws the same gaps; their latencies differ a little, as in the long run more requests
follow them) and, as the search does, the requests arriving after the first window
and before the last. It also splits the run into its windows, so the learner sees that within one
window the requests share one batch's fate and that a short trial samples only a few windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.capacity import POISSON_REQUESTS, steady_trial
from sim.metrics import meets_slos
from sim.setup import Setup
from sim.simulate import simulate


@dataclass(frozen=True)
class SteadyCheck:
    rate: float
    requests: int                 # the steady trial's length
    window_s: float
    short: int                    # the short trial's length (its first requests)
    short_ok: float               # fraction of the short trial within both SLOs
    short_windows: float          # how many windows the short trial's arrivals span
    judged_ok: float              # fraction of the judged requests (warm-up and drain windows left out)
    window_ok: np.ndarray         # fraction within both SLOs per window of arrivals, the judged ones
    target: float = 0.99

    @property
    def failing_windows(self) -> int:
        return int((self.window_ok < self.target).sum())


def steady_check(setup: Setup, rate: float, input_len: int, output_len: int, ttft_slo: float,
                 tpot_slo: float, *, short: int = POISSON_REQUESTS, seed: int = 0,
                 target: float = 0.99) -> SteadyCheck:
    """Simulate the steady-state trial at ``rate`` and judge it whole and by its first ``short`` requests."""
    n, window = steady_trial(setup, input_len, output_len, ttft_slo, tpot_slo, rate, target)
    result = simulate(setup, float(rate), n, input_len, output_len, seed)
    ok = meets_slos(result, ttft_slo, tpot_slo)
    arrival = result.arrival
    judged = (arrival >= window) & (arrival <= arrival[-1] - window)        # as sim.capacity.Runs judges
    index = (arrival // window).astype(int)
    inner = range(1, int(index[judged].max()) + 1) if judged.any() else range(0)
    window_ok = np.array([ok[judged & (index == i)].mean() for i in inner if (judged & (index == i)).any()])
    return SteadyCheck(float(rate), n, window, short, float(ok[:short].mean()), float(arrival[short - 1] / window),
                       float(ok[judged].mean()), window_ok, target)


def format_steady_check(c: SteadyCheck) -> str:
    verdict = lambda x: "pass" if x >= c.target else "fail"
    return "\n".join([
        f"{c.rate:.2f} req/s: steady trial {c.requests:,} requests, window {c.window_s:.1f} s",
        f"  its first {c.short} requests (the handbook's trial, {c.short_windows:.1f} windows): "
        f"{c.short_ok:6.1%} within SLO -> {verdict(c.short_ok)}",
        f"  judged part (first and last window left out): {c.judged_ok:6.1%} within SLO -> {verdict(c.judged_ok)}; "
        f"{c.failing_windows} of {len(c.window_ok)} windows under {c.target:.0%}",
    ])
