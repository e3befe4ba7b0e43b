"""Workloads: when requests arrive and how long they are, ready for ``sim.run(setup, workload)``.

Arrival processes (open loop unless said otherwise):

    poisson(rate, n, input_len, output_len, seed=0)        the core's stream: expovariate gaps from
                                                           random.Random(seed), summed from 0
    gamma(rate, n, input_len, output_len, cv=2.0, seed=0)  bursty: gamma gaps, mean 1/rate, CV cv
    uniform(rate, n, input_len, output_len)                evenly spaced: request i at (i + 1) / rate
    offline(n, input_len, output_len, seed=0)              everything at t = 0 (a batch job)
    closed_loop(concurrency, n, input_len, output_len, think_s=0, seed=0)
                                                           N clients, each sends its next request
                                                           think_s after its previous one finishes
    trace(path)                                            replay a CSV or JSONL file
    multi_turn(rate, sessions, turns, system_len, message_len, output_len, think_s)
                                                           chat sessions sharing their history
    shared_prompts(rate, n, prompts, system_len, input_len, output_len, skew)
                                                           shared system prompts, Zipf popularity
                                                           (both in sim/sessions.py, with prefix identity)

Lengths are ints or ``sim.lengths`` distributions; they are drawn from ``seed`` on a stream of
their own (numpy's generator seeded with ``[seed, 1]`` for prompts and ``[seed, 2]`` for outputs),
so changing a length distribution never moves the arrival times.
"""

from __future__ import annotations

import random

from sim.engine import run_requests
from sim.lengths import draw_lengths
from sim.result import SimResult
from sim.setup import Setup
from sim.simulate import poisson_arrivals
from sim.sessions import multi_turn, run_sessions, shared_prompts  # noqa: F401  (re-exported)
from sim.trace import Trace, read
from sim.validate import check_int, check_lengths_fit, check_number
from sim.workload_spec import Workload



def poisson(rate: float, num_requests: int, input_len, output_len, seed: int = 0) -> Workload:
    """Poisson arrivals exactly as ``sim.simulate`` draws them (same seed, same times)."""
    _check_rate(rate)
    n = _count(num_requests)
    check_int("seed", seed, None)
    return _open("poisson", poisson_arrivals(rate, n, seed), n, input_len, output_len, seed)


def gamma(rate: float, num_requests: int, input_len, output_len, cv: float = 2.0, seed: int = 0) -> Workload:
    """Gamma-distributed gaps with mean 1/rate and coefficient of variation ``cv`` (1: Poisson-like,
    above 1: bursts). Gaps come from ``random.Random(seed).gammavariate(1/cv^2, cv^2/rate)``."""
    _check_rate(rate)
    n = _count(num_requests)
    check_int("seed", seed, None)
    check_number("cv", cv, 0, note="(coefficient of variation of the gaps)")
    shape, scale = 1 / cv ** 2, cv ** 2 / rate
    draw = random.Random(seed).gammavariate
    t, times = 0.0, []
    for _ in range(n):
        t += draw(shape, scale)
        times.append(t)
    return _open("gamma", times, n, input_len, output_len, seed)


def uniform(rate: float, num_requests: int, input_len, output_len, seed: int = 0) -> Workload:
    """Evenly spaced arrivals: request i arrives at (i + 1) / rate."""
    _check_rate(rate)
    n = _count(num_requests)
    return _open("uniform", [(i + 1) / rate for i in range(n)], n, input_len, output_len, seed)


def offline(num_requests: int, input_len, output_len, seed: int = 0) -> Workload:
    """Every request at t = 0: a batch job, measured by throughput."""
    n = _count(num_requests)
    return _open("offline", [0.0] * n, n, input_len, output_len, seed)


def closed_loop(concurrency: int, num_requests: int, input_len, output_len, think_s: float = 0.0,
                seed: int = 0) -> Workload:
    """``concurrency`` clients: the first requests arrive at t = 0, each finish sends the next one
    ``think_s`` seconds later, until ``num_requests`` have been sent."""
    check_int("concurrency", concurrency, 1)
    n = _count(num_requests)
    check_number("think_s", think_s, 0, strict=False, note="(seconds)")
    inp, out = draw_lengths(n, input_len, output_len, seed)
    return Workload("closed_loop", None, inp, out, int(concurrency), float(think_s))


def trace(source, format: str = "auto", *, speed: float = 1.0, start_s: float = 0.0,
          duration_s: float | None = None) -> Workload:
    """Replay a trace: a file (the project's CSV/JSONL, Mooncake's or Azure's; see ``sim.trace``) or a
    ``sim.trace.Trace``. ``start_s`` / ``duration_s`` cut a window of the trace's own time (times then
    start at 0); ``speed`` replays it that many times as fast. Mooncake's block ids become the
    requests' prefix identity, so a prefix cache sees the trace's real sharing."""
    t = source if isinstance(source, Trace) else read(source, format)
    if start_s or duration_s is not None:
        t = t.window(start_s, duration_s)
    if speed != 1.0:
        t = t.scaled(speed)
    return Workload("trace", t.arrival, t.input_len, t.output_len, prefix=t.prefix())


def run(setup: Setup, workload: Workload) -> SimResult:
    """Run a workload through one instance; the same ``SimResult`` as ``sim.simulate``."""
    if not isinstance(setup, Setup):
        raise ValueError(f"setup must be a sim.Setup, got {type(setup).__name__}")
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a sim.workload.Workload, got {type(workload).__name__}")
    check_lengths_fit(setup, workload.input_len, workload.output_len)
    prio = workload.priority
    if workload.follows is not None:
        if prio is not None:
            raise ValueError("Workload.priority is not supported with multi-turn sessions (Workload.follows)")
        return run_sessions(setup, workload)
    if workload.prefix is not None:
        return run_requests(setup, workload.arrival, workload.input_len, workload.output_len,
                            prefix=workload.prefix, priorities=prio)
    if workload.arrival is None:
        return run_requests(setup, None, workload.input_len, workload.output_len,
                            concurrency=workload.concurrency, think_s=workload.think_s, priorities=prio)
    return run_requests(setup, workload.arrival, workload.input_len, workload.output_len, priorities=prio)


def _open(kind, times, n, input_len, output_len, seed) -> Workload:
    inp, out = draw_lengths(n, input_len, output_len, seed)
    return Workload(kind, tuple(times), inp, out)


def _check_rate(rate) -> None:
    check_number("rate", rate, 0, note="(requests per second)")


def _count(num_requests) -> int:
    check_int("num_requests", num_requests, 1)
    return int(num_requests)
