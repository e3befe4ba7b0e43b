"""The handbook's entry point: Poisson arrivals of identical requests through one instance."""

from __future__ import annotations

import random

from sim.engine import run_requests
from sim.result import SimResult
from sim.setup import Setup
from sim.validate import check_int, check_lengths_fit, check_number


def poisson_arrivals(rate: float, num_requests: int, seed: int = 0) -> list[float]:
    """Arrival times: gaps drawn in order from ``random.Random(seed).expovariate(rate)``, summed from 0."""
    expovariate = random.Random(seed).expovariate
    t, times = 0.0, []
    for _ in range(num_requests):
        t += expovariate(rate)
        times.append(t)
    return times


def simulate(setup: Setup, rate: float, num_requests: int, input_len: int, output_len: int,
             seed: int = 0) -> SimResult:
    """Send ``num_requests`` requests of ``input_len`` prompt and ``output_len`` output tokens at
    Poisson rate ``rate`` (req/s) into ``setup``; return per-request times in arrival order."""
    if not isinstance(setup, Setup):
        raise ValueError(f"setup must be a sim.Setup, got {type(setup).__name__}")
    check_number("rate", rate, 0, note="(requests per second)")
    check_int("num_requests", num_requests, 1)
    check_int("input_len", input_len, 1)
    check_int("output_len", output_len, 1)
    check_int("seed", seed, None)
    check_lengths_fit(setup, input_len, output_len)
    n = int(num_requests)
    return run_requests(setup, poisson_arrivals(rate, n, seed), [int(input_len)] * n, [int(output_len)] * n)
