"""Capacity search: the largest request rate one instance serves within its SLOs.

    max_rate(setup, (2000, 500), 2.0, 0.05)                      # doubling + bisection, to 0.5%
    max_rate(setup, (2000, 500), 2.0, 0.05, method="bisect")     # the handbook's 12 halvings of [1, 60]
    max_rate(setup, lambda r: workload.gamma(r, 1500, 2000, 500, cv=4), 2.0, 0.05)

``load`` is either fixed lengths ``(input_len, output_len)``, tried as Poisson arrivals (seed
``seed``), or a function ``rate -> sim.workload.Workload`` building the workload to try at each rate
(it then fixes its own request count and seed). A run passes when at least ``target`` of its
requests meet both SLOs (``meets_slo``).

How long a run at a rate lasts (fixed lengths):

- ``num_requests=None`` (the default of ``max_rate`` and ``search``): a **steady-state trial**
  (``steady_trial``). Its length is counted in *windows*, a window being the longer of the most
  time a passing request can spend in the instance (``ttft_slo + (output_len - 1) x tpot_slo``) and
  the time the arrivals take to fill the largest batch the instance holds (``min(max_num_seqs,
  kv_capacity_tokens // (input_len + output_len)) / rate``). Within one window the requests share
  one batch's fate: a burst that pushes one window over the SLOs fails most of its requests
  together, so a run's verdict is worth about as many independent samples as it has windows. The
  tail the target allows (``1 - target``: 1% for p99) must hold at least a window's worth of
  requests, or whether one bad window falls inside the run decides the verdict: ``STEADY_WINDOWS``
  = 200 windows (``2 / (1 - target)`` for a stricter target) give the 1% tail two windows, and the
  answer then moves by under 2% when the trial is doubled (``tests/test_capacity.py`` checks it for
  ``max_num_seqs`` 64-4096; 1500 requests move it by up to 7% and overstate it by 10-16%). One
  window's worth was not enough once the step model grew its host time per sequence: a batch
  capped at 64 sequences (70B FP8 on one H200, MLPerf's limits) queues near its capacity for
  longer than a window, and 100 windows moved by 2.3% when doubled; with 200, seeds 0-3 move by
  0.4-2.0% (the spread of the answer over seeds is itself about 2%). The first window (a warm-up: its requests meet a partly empty batch)
  and the last (a drain: no arrivals follow them) are not judged. A run that has certainly failed
  stops early (``Runs``), so an overloaded rate costs a few windows, not a hundred.
  ``STEADY_MIN_REQUESTS`` and ``STEADY_MAX_REQUESTS`` bound a trial's size. ``windows=W`` asks for
  trials of W windows instead: a quicker, noisier answer (the chapter-02 panel's provisional figure
  uses 20, with ``rel_tol`` 0.05; ``benchmarks/bench_panel.py --estimates`` measures how far it lands
  from the default's).
- ``num_requests=N``: N requests, every one judged (the handbook's trials: ``method="bisect"``
  uses 1500). An instance whose batch holds hundreds of requests absorbs a short run whole and
  never reaches a steady state, so such trials overstate capacity (70B FP8 on one H200 with
  ``max_num_seqs=1200``: 17.5 req/s with 1500 requests, 15.0 req/s steady).
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np

from sim.setup import Setup
from sim.validate import check_int, check_lengths_fit, check_number

METHODS = ("search", "bisect")
CRITERIA = ("both", "each")                 # a run passes: target of requests meet both SLOs / each SLO's percentile
SEARCH_REL_TOL = 0.005                      # the search's default relative width of its last bracket
BISECT_LO, BISECT_HI, BISECT_ITERATIONS = 1.0, 60.0, 12     # the handbook's bracket and halvings
POISSON_REQUESTS = 1500                     # requests per run of the handbook's bisection (the chapter's)
STEADY_WINDOWS = 200                        # a steady-state trial's length, in windows (see the module doc)
STEADY_MIN_REQUESTS = 3000                  # ... and at least this many requests
STEADY_MAX_REQUESTS = 300_000               # ... and at most (SLOs so loose a window never ends)


class Cancelled(Exception):
    """A search stopped because its ``stop()`` said so (the caller no longer wants the answer)."""


class BracketError(ValueError):
    """The answer is outside the range tried: below ``lo`` or at/above ``hi`` (``method="bisect"``),
    or the SLOs hold at every rate up to a million times the roofline bound (``method="search"``)."""


class InfeasibleError(ValueError):
    """No rate meets the SLOs on one instance; ``reason`` says which SLO a lone request misses."""

    def __init__(self, message: str, *, ttft_s: float, tpot_s: float):
        super().__init__(message)
        self.reason = message
        self.ttft_s = ttft_s
        self.tpot_s = tpot_s

    def __reduce__(self):              # pickle (course.memo's tables): the keywords are not in args
        return _infeasible_error, (self.reason, self.ttft_s, self.tpot_s)


def _infeasible_error(message: str, ttft_s: float, tpot_s: float) -> InfeasibleError:
    return InfeasibleError(message, ttft_s=ttft_s, tpot_s=tpot_s)


def max_rate(setup: Setup, load, ttft_slo: float, tpot_slo: float, *, method: str = "search",
             target: float = 0.99, num_requests: int | None = None, seed: int | None = None,
             rel_tol: float | None = None, lo: float | None = None, hi: float | None = None,
             iterations: int | None = None, criterion: str = "both", windows: int | None = None,
             stop=None) -> float:
    """The largest request rate (req/s) at which ``load`` on ``setup`` meets both SLOs (seconds).

    ``method="search"`` (default) needs no bracket: it starts from ``throughput_bound``, halves or
    doubles until one rate passes and a higher one fails, then bisects until the bracket is within
    ``rel_tol`` (default 0.005) of its lower end, which it returns. It returns 0.0 when even a
    trickle of requests misses the SLOs (a prefill alone longer than the TTFT SLO, say).

    ``method="bisect"`` is the handbook's loop: ``iterations`` halvings of [lo, hi] (default 12 of
    [1, 60]), keeping the feasible end; it returns the last feasible midpoint (16.75830078125 req/s
    for the chapter's instance) and raises ``BracketError`` when every midpoint failed (the answer
    is below ``lo``) or every one passed (it is at or above ``hi``).

    ``num_requests`` and ``seed`` (default 0) apply to fixed lengths only: ``num_requests=None``
    runs steady-state trials (the default of ``method="search"``; see the module docstring), an
    integer that many requests per run (the bisection's default is the handbook's 1500).
    ``rel_tol`` applies to the search only; ``lo``, ``hi`` and ``iterations`` to the bisection only.

    ``criterion``: ``"both"`` (default) passes a run when at least ``target`` of its requests meet
    both SLOs; ``"each"`` when the ``target`` percentile of TTFT and that of TPOT are each within
    its SLO (MLPerf LoadGen's server rule: at most ``1 - target`` of the requests miss each one).

    ``windows``: a steady-state trial's length in windows (fixed lengths, ``num_requests=None``;
    default ``STEADY_WINDOWS``), at least 3 (a warm-up, a drain and one judged window). ``stop``: a
    function of no arguments, asked between slices of every run (fixed lengths) or before each run
    (a workload function, whose runs are not sliced); when it returns True the search raises
    ``Cancelled`` (an interactive caller whose question has changed).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "bisect" and num_requests is None and not callable(load) and windows is None:
        num_requests = POISSON_REQUESTS
    ok = _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed, criterion, windows, stop)
    if method == "bisect":
        _only_for("search", rel_tol=rel_tol)
        lo = BISECT_LO if lo is None else lo
        hi = BISECT_HI if hi is None else hi
        return _bisect(ok, lo, hi, BISECT_ITERATIONS if iterations is None else iterations)
    _only_for("bisect", lo=lo, hi=hi, iterations=iterations)
    return _search(ok, _first_guess(setup, load), SEARCH_REL_TOL if rel_tol is None else rel_tol)


def search(setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float, *,
           target: float = 0.99, num_requests: int | None = None, seed: int | None = None,
           rel_tol: float | None = None, criterion: str = "both", windows: int | None = None,
           stop=None) -> tuple[float, "Runs"]:
    """``max_rate(..., method="search")`` for fixed lengths, with the runs it made: ``Runs.results``
    holds the result of every run that passed, so a caller can reuse the one at the answer (the
    panels draw it and read its bound) instead of simulating it again."""
    runs = _predicate(setup, (input_len, output_len), ttft_slo, tpot_slo, target, num_requests, seed, criterion,
                      windows, stop)
    rate = _search(runs, _first_guess(setup, (input_len, output_len)),
                   SEARCH_REL_TOL if rel_tol is None else rel_tol)
    return rate, runs


def meets_slo(setup: Setup, load, rate: float, ttft_slo: float, tpot_slo: float, *,
              target: float = 0.99, num_requests: int | None = None, seed: int | None = None,
              criterion: str = "both") -> bool:
    """Whether at least ``target`` of the requests of ``load`` at ``rate`` meet both SLOs (of the
    judged ones: a steady-state trial's when ``num_requests`` is None, else all ``num_requests``)."""
    check_number("rate", rate, 0, note="(requests per second)")
    return _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed, criterion)(rate)


def throughput_bound(setup: Setup, input_len: int, output_len: int) -> float:
    """Requests per second the instance could finish if every step were full and latency free.

    The slower of two limits: compute (each request costs 2 x params FLOPs per token it processes)
    and decode memory traffic (each step reads the weights once for up to max_num_seqs requests);
    ``sim.bound.ceilings`` says how each is counted.
    """
    from sim.bound import ceilings
    c = ceilings(setup, input_len, output_len)
    return min(c.compute, c.bandwidth)


# --- the load: fixed lengths or a workload function ------------------------------------------

def _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed, criterion="both", windows=None,
               stop=None):
    """rate -> whether the run of ``load`` at that rate meets the SLOs, everything else fixed."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    check_number("ttft_slo", ttft_slo, 0, note="(seconds)")
    check_number("tpot_slo", tpot_slo, 0, note="(seconds)")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    if stop is not None and not callable(stop):
        raise ValueError(f"stop must be a function of no arguments returning True to cancel, got {stop!r}")
    if callable(load):
        if num_requests is not None or seed is not None or windows is not None:
            raise ValueError("num_requests, seed and windows apply to fixed lengths only: a load function "
                             "rate -> Workload sets its own request count and seed")
        return LoadRuns(setup, load, ttft_slo, tpot_slo, target, criterion, stop)
    input_len, output_len = _lengths(load)
    if num_requests is not None:
        check_int("num_requests", num_requests, 1)
    if windows is not None:
        check_int("windows", windows, 3)         # a warm-up, a drain and at least one judged window
        windows = int(windows)
        if num_requests is not None:
            raise ValueError("windows sets a steady-state trial's length; num_requests a fixed one: give one of them")
    seed = 0 if seed is None else seed
    check_lengths_fit(setup, *(x if isinstance(x, int) else x.high or 1 for x in (input_len, output_len)))
    return Runs(setup, input_len, output_len, num_requests, seed, ttft_slo, tpot_slo, target, criterion,
                windows, stop)


def steady_trial(setup: Setup, input_len, output_len, ttft_slo: float, tpot_slo: float,
                 rate: float, target: float = 0.99, windows: int | None = None) -> tuple[int, float]:
    """A steady-state trial at ``rate``: (requests, window seconds). It lasts ``STEADY_WINDOWS``
    windows, or ``2 / (1 - target)`` when that is more (a tail of ``1 - target`` then still spans
    two windows), or exactly ``windows`` when given, at least ``STEADY_MIN_REQUESTS`` and at most
    ``STEADY_MAX_REQUESTS`` requests; requests arriving in its first and last window are not judged
    (see the module docstring). Lengths are ints or ``sim.lengths`` distributions (their means count)."""
    mean_in, mean_out = (x if isinstance(x, int) else x.mean for x in (input_len, output_len))
    batch = max(1, min(setup.max_num_seqs, int(setup.kv_capacity_tokens // (mean_in + mean_out))))
    window = max(ttft_slo + max(0.0, mean_out - 1) * tpot_slo, batch / rate)
    if windows is None:
        windows = max(STEADY_WINDOWS, round(2 / (1 - target), 6)) if target < 1 else math.inf   # 2/(1-0.99) is 199.99999999999983
    n = windows * window * rate
    n = STEADY_MAX_REQUESTS if not math.isfinite(n) else min(STEADY_MAX_REQUESTS, max(STEADY_MIN_REQUESTS, math.ceil(n)))
    return n, window


class Runs:
    """``rate -> passes``: the run of Poisson requests of fixed lengths at that rate meets the SLOs
    (at least ``target`` of its judged requests within both). With ``num_requests`` N every one of
    N requests is judged, decided as ``meets_slos(simulate(...)).mean() >= target`` always was;
    with ``num_requests=None`` the run is ``steady_trial``'s at that rate and its first and last
    window are not judged. Either way only cheaper:

    * the arrivals at every rate come from one list of draws: ``poisson_arrivals`` adds
      ``-log(1 - random()) / rate`` gap by gap, so the ``-log(1 - random())`` terms are kept and
      only divided by each new rate (same operations, same floats); a steady trial takes as many of
      them as its length needs;
    * a run stops as soon as it has certainly failed: the instance is advanced in slices, and a
      judged request that has waited longer than the TTFT SLO without its first token, or has
      decoded longer than ``tpot_slo x (output_len - 1)`` without finishing, has missed whatever
      happens next. Once more requests have missed than ``target`` allows the run fails; a run
      whose queue grows without bound crosses that line within a few windows of simulated time. A
      run that passes runs to its end and is judged on its times, as before.

    ``levels[rate]`` of a passing run is the SLO ratio (the worse of TTFT / ttft_slo and TPOT /
    tpot_slo) of the judged request at the target's rank (<= 1; a run passes when it is about <= 1); None
    for a failing run, cut short or not, so the search takes the same steps whether or not a run
    was cut. The search interpolates on it. ``runs`` counts runs started, ``cut_short`` how many
    stopped early; ``results`` keeps the passing runs' results; ``lengths`` each run's requests.
    ``windows``: a steady trial's length (``steady_trial``); ``stop()``, asked before each slice,
    raises ``Cancelled`` when True.
    """

    SLICES = 16                       # how often a run checks whether it has already failed

    def __init__(self, setup, input_len, output_len, num_requests, seed, ttft_slo, tpot_slo, target,
                 criterion="both", windows=None, stop=None):
        self.setup, self.input_len, self.output_len, self.n = setup, input_len, output_len, num_requests
        self.seed, self.ttft_slo, self.tpot_slo, self.target = seed, ttft_slo, tpot_slo, target
        self.criterion, self.windows, self.stop = criterion, windows, stop
        self.steady = num_requests is None
        self.levels: dict[float, float | None] = {}
        self.results: dict[float, object] = {}
        self.lengths: dict[float, int] = {}
        self.runs = self.cut_short = 0

    def trial(self, rate: float) -> tuple[int, float]:
        """(requests, window seconds) of the run at ``rate``; window 0 when every request is judged."""
        if not self.steady:
            return self.n, 0.0
        return steady_trial(self.setup, self.input_len, self.output_len, self.ttft_slo, self.tpot_slo, rate,
                            self.target, self.windows)

    def arrivals(self, rate: float, n: int | None = None) -> list[float]:
        """``poisson_arrivals(rate, n, seed)``, bit for bit, from the kept draws."""
        n = self.trial(rate)[0] if n is None else n
        gaps = np.fromiter(_unit_gaps(self.seed, n), dtype=float, count=n) / rate
        return np.cumsum(gaps).tolist()          # a running sum, term by term: t += e / rate

    def judged(self, arr: np.ndarray, window: float) -> np.ndarray:
        """Which requests the verdict counts: all, or those past the first window and before the last."""
        if window <= 0:
            return np.ones(len(arr), dtype=bool)
        keep = (arr >= window) & (arr <= arr[-1] - window)
        return keep if keep.any() else np.ones(len(arr), dtype=bool)

    def __call__(self, rate: float) -> bool:
        from sim.engine import Instance

        self.runs += 1
        n, window = self.trial(rate)
        self.lengths[rate] = n
        inps, outs = self.request_lengths(n)
        arrivals = self.arrivals(rate, n)
        arr = np.asarray(arrivals)
        judged = self.judged(arr, window)
        allowed = _allowed(int(judged.sum()), self.target)
        inst = Instance(self.setup)
        inst.submit_many(arrivals, inps, outs)
        out = np.asarray(outs, dtype=float)
        for k in range(1, self.SLICES):
            if self.stop is not None and self.stop():
                raise Cancelled(f"the search was stopped during its run at {rate:.4g} req/s")
            inst.advance(arrivals[k * n // self.SLICES])
            if self._certain_misses(inst, arr, out, judged, k * n // self.SLICES + 1) > allowed:
                self.cut_short += 1
                self.levels[rate] = None
                return False
        inst.advance()
        result = inst.result()
        ttft, tpot = result.ttft[judged], result.tpot[judged]
        ok = _passes(ttft, tpot, self.ttft_slo, self.tpot_slo, self.target, self.criterion)
        self.levels[rate] = _level(ttft, tpot, self.ttft_slo, self.tpot_slo, allowed, self.criterion) if ok else None
        if ok:
            self.results[rate] = result
        return ok

    def request_lengths(self, n: int) -> tuple[list[int], list[int]]:
        """The n requests' prompt and output lengths: the fixed ones, or drawn as
        ``sim.workload.poisson(rate, n, input_len, output_len, seed)`` draws them."""
        from sim.workload import poisson
        if isinstance(self.input_len, int) and isinstance(self.output_len, int):
            return [self.input_len] * n, [self.output_len] * n
        w = poisson(1.0, n, self.input_len, self.output_len, self.seed)
        check_lengths_fit(self.setup, w.input_len, w.output_len)
        return list(w.input_len), list(w.output_len)

    def _certain_misses(self, inst, arr, out, judged, m) -> int:
        """Judged requests among the first ``m`` (those that have arrived: a later one has missed
        nothing yet) that have missed an SLO by ``inst.now``, whatever the later steps do: a first
        token or a finish still to come lands at ``inst.now`` or later. With ``criterion="each"``,
        the larger of the TTFT misses and the TPOT misses."""
        now = inst.now
        m = min(m, len(arr))
        arr, out, judged = arr[:m], out[:m], judged[:m]
        first = np.frombuffer(inst.first, dtype=float, count=m).copy()
        fin = np.frombuffer(inst.fin, dtype=float, count=m).copy()
        start = np.where(np.isnan(first), now, first)
        late = (start - arr > self.ttft_slo) & judged
        end = np.where(np.isnan(fin), now, fin)
        with np.errstate(divide="ignore", invalid="ignore"):
            slow = (out > 1) & ((end - first) / (out - 1) > self.tpot_slo) & judged
        if self.criterion == "each":
            return max(int(np.count_nonzero(late)), int(np.count_nonzero(slow)))
        return int(np.count_nonzero(late | slow))


def _allowed(n: int, target: float) -> int:
    """The most of ``n`` judged requests that may miss with the share meeting both SLOs >= target
    (the same test, ``(n - m) / n >= target``, tried around its closed form; -1 when none may)."""
    m = min(n, int(n * (1 - target)) + 2)
    while m >= 0 and (n - m) / n < target:
        m -= 1
    return m


class LoadRuns:
    """``rate -> passes`` for a load function ``rate -> Workload``: each run is whole (the workload
    decides its arrivals), with ``levels`` and ``results`` of the passing ones as ``Runs`` keeps them,
    so a load function and fixed lengths take the same search steps."""

    def __init__(self, setup, load, ttft_slo, tpot_slo, target, criterion="both", stop=None):
        self.setup, self.load, self.ttft_slo, self.tpot_slo, self.target = setup, load, ttft_slo, tpot_slo, target
        self.criterion, self.stop = criterion, stop
        self.levels: dict[float, float | None] = {}
        self.results: dict[float, object] = {}
        self.runs = self.cut_short = 0

    def __call__(self, rate: float) -> bool:
        from sim.workload import run

        if self.stop is not None and self.stop():
            raise Cancelled(f"the search was stopped before its run at {rate:.4g} req/s")
        self.runs += 1
        result = run(self.setup, self.load(rate))
        ok = _passes(result.ttft, result.tpot, self.ttft_slo, self.tpot_slo, self.target, self.criterion)
        allowed = _allowed(len(result.ttft), self.target)
        self.levels[rate] = (_level(result.ttft, result.tpot, self.ttft_slo, self.tpot_slo, allowed, self.criterion)
                             if ok else None)
        if ok:
            self.results[rate] = result
        return ok


def _passes(ttft, tpot, ttft_slo, tpot_slo, target, criterion) -> bool:
    """Whether the judged requests' times pass (``criterion``: see ``max_rate``)."""
    ttft_ok, tpot_ok = np.asarray(ttft) <= ttft_slo, np.asarray(tpot) <= tpot_slo
    if criterion == "each":
        return float(ttft_ok.mean()) >= target and float(tpot_ok.mean()) >= target
    return float((ttft_ok & tpot_ok).mean()) >= target


def _level(ttft, tpot, ttft_slo, tpot_slo, allowed, criterion="both") -> float:
    """The SLO ratio of the request at the target's rank (see ``Runs``); with ``criterion="each"``
    the larger of TTFT's and TPOT's ratios at that rank."""
    n = len(ttft)
    if allowed >= n:
        return 0.0
    ttft, tpot = np.asarray(ttft) / ttft_slo, np.asarray(tpot) / tpot_slo
    if criterion == "each":
        return float(max(np.sort(ttft)[n - allowed - 1], np.sort(tpot)[n - allowed - 1]))
    return float(np.sort(np.maximum(ttft, tpot))[n - allowed - 1])


_GAPS: dict[int, list] = {}          # seed -> the first terms of its stream, grown on demand
_GAP_SEEDS = 16                      # streams kept


def _unit_gaps(seed: int, n: int):
    """The first ``n`` terms ``-log(1 - random())`` that ``random.Random(seed).expovariate(rate)``
    divides by ``rate`` (CPython's expovariate), in order. One stream per seed, grown when a longer
    run needs more: a run of n requests takes the same first n terms as a shorter or longer one."""
    gaps = _GAPS.get(seed)
    if gaps is None or len(gaps) < n:
        draw = random.Random(seed).random
        gaps = [-math.log(1.0 - draw()) for _ in range(max(n, 2 * len(gaps or ())))]
        if len(_GAPS) >= _GAP_SEEDS and seed not in _GAPS:
            _GAPS.pop(next(iter(_GAPS)))
        _GAPS[seed] = gaps
    return itertools.islice(gaps, n)


def _lengths(load):
    """(input_len, output_len): whole numbers >= 1 (ints), or ``sim.lengths`` distributions."""
    from sim.lengths import Length
    if isinstance(load, (str, bytes)) or not hasattr(load, "__len__") or len(load) != 2:
        raise ValueError("load must be (input_len, output_len), two whole numbers >= 1 or sim.lengths "
                         f"distributions, or a function rate -> Workload; got {load!r}")
    out = []
    for name, value in zip(("input_len", "output_len"), load):
        if isinstance(value, Length):
            out.append(value)
        else:
            check_int(name, value, 1)
            out.append(int(value))
    return tuple(out)


def _first_guess(setup, load) -> float:
    """The search's starting rate: ``throughput_bound`` at the load's (mean) lengths."""
    if callable(load):
        probe = load(1.0)
        return throughput_bound(setup, max(1, round(probe.mean_input_len)), max(1, round(probe.mean_output_len)))
    return throughput_bound(setup, *(x if isinstance(x, int) else max(1, round(x.mean)) for x in _lengths(load)))


def _only_for(method: str, **given) -> None:
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"{name} applies to method={method!r} only")


# --- the two searches over a predicate ok(rate) ----------------------------------------------

def _bisect(ok, lo: float, hi: float, iterations: int) -> float:
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < lo < hi < inf, got lo={lo!r}, hi={hi!r}")
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ValueError(f"iterations must be a whole number >= 1, got {iterations!r}")
    low, high = lo, hi
    for _ in range(iterations):
        mid = (low + high) / 2
        if ok(mid):
            low = mid
        else:
            high = mid
    if low == lo:
        raise BracketError(f"the SLOs are not met at any rate tried in ({lo}, {hi}) req/s: the answer "
                           f"is below lo={lo}; lower lo")
    if high == hi:
        raise BracketError(f"the SLOs are met at every rate tried up to {low:.4g} req/s: the answer is "
                           f"at or above hi={hi}; raise hi")
    return low


def _search(ok, guess: float, rel_tol: float) -> float:
    """The largest rate r with ok(r), to within ``rel_tol`` of it: a bracket low < high with ok(low)
    and not ok(high), narrowed until high - low <= rel_tol x low; returns low.

    The bracket starts at ``guess`` (the analytic ceiling, ``throughput_bound``): ``high`` = guess
    (doubled while it passes: a short run can outlast a queue that would grow), ``low`` = guess / 2
    (quartered while it fails; 0.0 below a millionth of the guess). Inside it each next rate is
    interpolated on the runs' SLO ``level`` (``Runs.levels``; 1 / level linear in the rate, as a
    queue's tail wait grows like 1 / (capacity - rate); where it crosses 1), aimed a little past the crossing on the side the bracket has not moved from, so
    both ends close in; a plain bisection step is taken when a level is missing (a run cut short,
    or a load function) or an interpolation would barely shrink the bracket. Any bracket the rule
    keeps ends within ``rel_tol`` of the same answer as the halving search, with fewer runs."""
    if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not 0 < rel_tol < 1:
        raise ValueError(f"rel_tol must be in (0, 1), got {rel_tol!r}")
    levels = getattr(ok, "levels", {})
    high = guess
    if ok(high):
        low = high
        high = high * 2
        while ok(high):
            low, high = high, high * 2
            if high > guess * 1e6:
                raise BracketError(f"the SLOs are met at every rate tried up to {low:.4g} req/s (a million "
                                   "times the roofline bound): they do not constrain this instance")
    else:
        low = guess / 2
        while not ok(low):
            high, low = low, low / 4
            if low < guess * 1e-6:
                return 0.0
    moved = None                                   # which end the last step moved
    slow = 0                                       # interpolated steps in a row that did not halve it
    while high - low > rel_tol * low:
        width = high - low
        rate = _interpolate(levels, low, high, guess)
        if rate is None or not low < rate < high or slow >= 2:
            rate, slow = (low + high) / 2, 0           # bisect
        else:
            nudge = 0.5 * rel_tol * low            # aim past the crossing, away from the end that moved
            rate = rate - nudge if moved == "high" else rate + nudge if moved == "low" else rate
            margin = min(0.45 * width, 0.4 * rel_tol * low)
            rate = min(max(rate, low + margin), high - margin)
        if ok(rate):
            low, moved = rate, "low"
        else:
            high, moved = rate, "high"
        slow = slow + 1 if high - low > width / 2 else 0
    return low


def _interpolate(levels: dict, low: float, high: float, ceiling: float) -> float | None:
    """Where 1 / level crosses 1, on the line through two runs' levels: the nearest known level on
    each side of the crossing, else the two highest passing ones (extrapolated), else the one
    passing level and the ceiling (where 1 / level would reach 0). None without a passing level."""
    below = sorted((r, lv) for r, lv in levels.items() if lv is not None and 0 < lv <= 1 and r <= low)
    above = sorted((r, lv) for r, lv in levels.items() if lv is not None and lv > 1 and r >= high)
    if below and above:
        (r0, l0), (r1, l1) = below[-1], above[0]
    elif len(below) >= 2:
        (r0, l0), (r1, l1) = below[-2], below[-1]
    elif below and below[-1][0] < ceiling:
        r0, l0 = below[-1]
        return ceiling - (ceiling - r0) * l0
    else:
        return None
    y0, y1 = 1 / l0, 1 / l1          # near saturation the tail wait grows like 1 / (capacity - rate)
    if r1 == r0 or y1 == y0:
        return None
    return r0 + (1 - y0) * (r1 - r0) / (y1 - y0)
