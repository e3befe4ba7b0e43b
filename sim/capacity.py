"""Capacity search: the largest request rate one instance serves within its SLOs.

    max_rate(setup, (2000, 500), 2.0, 0.05)                      # doubling + bisection, to 0.5%
    max_rate(setup, (2000, 500), 2.0, 0.05, method="bisect")     # the handbook's 12 halvings of [1, 60]
    max_rate(setup, lambda r: workload.gamma(r, 1500, 2000, 500, cv=4), 2.0, 0.05)

``load`` is either fixed lengths ``(input_len, output_len)``, tried as ``num_requests`` Poisson
arrivals (seed ``seed``), or a function ``rate -> sim.workload.Workload`` building the workload to
try at each rate (it then fixes its own request count and seed). A run passes when at least
``target`` of its requests meet both SLOs (``meets_slo``).
"""

from __future__ import annotations

import math

from sim.metrics import meets_slos
from sim.setup import Setup
from sim.simulate import simulate
from sim.validate import check_int, check_number

METHODS = ("search", "bisect")
SEARCH_REL_TOL = 0.005                      # the search's default relative width of its last bracket
BISECT_LO, BISECT_HI, BISECT_ITERATIONS = 1.0, 60.0, 12     # the handbook's bracket and halvings
POISSON_REQUESTS = 1500                     # requests per run for fixed lengths (the chapter's)


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


def max_rate(setup: Setup, load, ttft_slo: float, tpot_slo: float, *, method: str = "search",
             target: float = 0.99, num_requests: int | None = None, seed: int | None = None,
             rel_tol: float | None = None, lo: float | None = None, hi: float | None = None,
             iterations: int | None = None) -> float:
    """The largest request rate (req/s) at which ``load`` on ``setup`` meets both SLOs (seconds).

    ``method="search"`` (default) needs no bracket: it starts from ``throughput_bound``, halves or
    doubles until one rate passes and a higher one fails, then bisects until the bracket is within
    ``rel_tol`` (default 0.005) of its lower end, which it returns. It returns 0.0 when even a
    trickle of requests misses the SLOs (a prefill alone longer than the TTFT SLO, say).

    ``method="bisect"`` is the handbook's loop: ``iterations`` halvings of [lo, hi] (default 12 of
    [1, 60]), keeping the feasible end; it returns the last feasible midpoint (16.75830078125 req/s
    for the chapter's instance) and raises ``BracketError`` when every midpoint failed (the answer
    is below ``lo``) or every one passed (it is at or above ``hi``).

    ``num_requests`` (default 1500) and ``seed`` (default 0) apply to fixed lengths only;
    ``rel_tol`` to the search only; ``lo``, ``hi`` and ``iterations`` to the bisection only.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    ok = _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed)
    if method == "bisect":
        _only_for("search", rel_tol=rel_tol)
        lo = BISECT_LO if lo is None else lo
        hi = BISECT_HI if hi is None else hi
        return _bisect(ok, lo, hi, BISECT_ITERATIONS if iterations is None else iterations)
    _only_for("bisect", lo=lo, hi=hi, iterations=iterations)
    return _search(ok, _first_guess(setup, load), SEARCH_REL_TOL if rel_tol is None else rel_tol)


def meets_slo(setup: Setup, load, rate: float, ttft_slo: float, tpot_slo: float, *,
              target: float = 0.99, num_requests: int | None = None, seed: int | None = None) -> bool:
    """Whether at least ``target`` of the requests of ``load`` at ``rate`` meet both SLOs."""
    check_number("rate", rate, 0, note="(requests per second)")
    return _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed)(rate)


def throughput_bound(setup: Setup, input_len: int, output_len: int) -> float:
    """Requests per second the instance could finish if every step were full and latency free.

    The slower of two limits: compute (each request costs 2 x params FLOPs per token it processes)
    and decode memory traffic (each step reads the weights once for up to max_num_seqs requests).
    """
    flops_per_request = 2 * setup.params * (input_len + output_len)
    compute_rate = setup.peak_flops * setup.mfu / flops_per_request
    batch = min(setup.max_num_seqs, setup.kv_capacity_tokens // (input_len + output_len))
    decode_step = (setup.weight_bytes + setup.kv_bytes_per_token * batch * (input_len + output_len / 2)) / setup.bandwidth
    memory_rate = batch / (output_len * (decode_step + setup.step_overhead))
    if setup.comm_s_per_token:          # communication adds to every token's time
        compute_rate = 1 / (1 / compute_rate + setup.comm_s_per_token * (input_len + output_len))
        memory_rate = batch / (output_len * (decode_step + setup.step_overhead + setup.comm_s_per_token * batch))
    return min(compute_rate, memory_rate)


# --- the load: fixed lengths or a workload function ------------------------------------------

def _predicate(setup, load, ttft_slo, tpot_slo, target, num_requests, seed):
    """rate -> whether the run of ``load`` at that rate meets the SLOs, everything else fixed."""
    check_number("ttft_slo", ttft_slo, 0, note="(seconds)")
    check_number("tpot_slo", tpot_slo, 0, note="(seconds)")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    if callable(load):
        if num_requests is not None or seed is not None:
            raise ValueError("num_requests and seed apply to fixed lengths only: a load function "
                             "rate -> Workload sets its own request count and seed")
        from sim.workload import run

        return lambda rate: float(meets_slos(run(setup, load(rate)), ttft_slo, tpot_slo).mean()) >= target
    input_len, output_len = _lengths(load)
    num_requests = POISSON_REQUESTS if num_requests is None else num_requests
    check_int("num_requests", num_requests, 1)
    seed = 0 if seed is None else seed
    return lambda rate: float(meets_slos(simulate(setup, rate, num_requests, input_len, output_len, seed),
                                         ttft_slo, tpot_slo).mean()) >= target


def _lengths(load) -> tuple[int, int]:
    if isinstance(load, (str, bytes)) or not hasattr(load, "__len__") or len(load) != 2:
        raise ValueError("load must be (input_len, output_len), two whole numbers >= 1, or a function "
                         f"rate -> Workload; got {load!r}")
    input_len, output_len = load
    check_int("input_len", input_len, 1)
    check_int("output_len", output_len, 1)
    return int(input_len), int(output_len)


def _first_guess(setup, load) -> float:
    """The search's starting rate: ``throughput_bound`` at the load's (mean) lengths."""
    if callable(load):
        probe = load(1.0)
        return throughput_bound(setup, max(1, round(probe.mean_input_len)), max(1, round(probe.mean_output_len)))
    return throughput_bound(setup, *_lengths(load))


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
    if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not 0 < rel_tol < 1:
        raise ValueError(f"rel_tol must be in (0, 1), got {rel_tol!r}")
    low, high = guess / 2, guess * 2
    while not ok(low):
        high, low = low, low / 4
        if low < guess * 1e-6:
            return 0.0
    while ok(high):
        low, high = high, high * 2
        if high > guess * 1e6:
            raise BracketError(f"the SLOs are met at every rate tried up to {low:.4g} req/s (a million "
                               "times the roofline bound): they do not constrain this instance")
    while high - low > rel_tol * low:
        mid = (low + high) / 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low
