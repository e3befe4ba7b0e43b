"""Capacity search: the largest request rate one instance serves within its SLOs."""

from __future__ import annotations

import math

from sim.metrics import meets_slos
from sim.setup import Setup
from sim.simulate import simulate


class BracketError(ValueError):
    """The bisection's answer sits at an end of its bracket: widen ``lo`` or ``hi``."""


def meets_slo(setup: Setup, rate: float, input_len: int, output_len: int, ttft_slo: float,
              tpot_slo: float, *, target: float = 0.99, num_requests: int = 1500, seed: int = 0) -> bool:
    """Whether at least ``target`` of the requests meet both SLOs at this Poisson rate."""
    result = simulate(setup, rate, num_requests, input_len, output_len, seed)
    return float(meets_slos(result, ttft_slo, tpot_slo).mean()) >= target


def max_rate(setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float, *,
             target: float = 0.99, num_requests: int = 1500, lo: float = 1.0, hi: float = 60.0,
             iterations: int = 12, seed: int = 0) -> float:
    """The handbook's bisection: ``iterations`` halvings of [lo, hi], keeping the feasible end.

    Returns the last feasible midpoint (the chapter's example gives 16.75830078125 req/s). Raises
    ``BracketError`` when every midpoint failed (the answer is below ``lo``) or every one passed
    (it is at or above ``hi``): returning ``lo`` or ``hi`` then would be a silent wrong answer.
    """
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < lo < hi < inf, got lo={lo!r}, hi={hi!r}")
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ValueError(f"iterations must be a whole number >= 1, got {iterations!r}")
    low, high = lo, hi
    for _ in range(iterations):
        mid = (low + high) / 2
        if meets_slo(setup, mid, input_len, output_len, ttft_slo, tpot_slo,
                     target=target, num_requests=num_requests, seed=seed):
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


def find_max_rate(setup: Setup, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float, *,
                  target: float = 0.99, num_requests: int = 1500, rel_tol: float = 0.005,
                  seed: int = 0) -> float:
    """The largest feasible rate without a bracket to guess: found by doubling, then bisection.

    The search starts from a roofline estimate of the instance's throughput, widens until one rate
    passes and a higher one fails, then bisects until the bracket is within ``rel_tol``. Returns
    0.0 when even a trickle of requests misses the SLOs (for example a prompt whose prefill alone
    takes longer than the TTFT SLO).
    """
    def ok(rate: float) -> bool:
        return meets_slo(setup, rate, input_len, output_len, ttft_slo, tpot_slo,
                         target=target, num_requests=num_requests, seed=seed)

    guess = throughput_bound(setup, input_len, output_len)
    low, high = guess / 2, guess * 2
    while not ok(low):
        high, low = low, low / 4
        if low < guess * 1e-6:
            return 0.0
    while ok(high):
        low, high = high, high * 2
    while high - low > rel_tol * low:
        mid = (low + high) / 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


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
    return min(compute_rate, memory_rate)
