"""What a simulation returns: per-request times, and a compact log of every step."""

from __future__ import annotations

from functools import cached_property
from typing import Iterator, NamedTuple

import numpy as np


class Request(NamedTuple):
    """One finished request (seconds from the start of the run)."""

    arrival: float
    first_token: float
    finish: float
    input_len: int
    output_len: int

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival

    @property
    def tpot(self) -> float:
        """Mean gap between output tokens; 0.0 for a one-token output (it has no gaps)."""
        if self.output_len == 1:
            return 0.0
        return (self.finish - self.first_token) / (self.output_len - 1)


RECOMPUTE, READBACK, SWAP = 1, 2, 4        # step log flags: what an event step contained


class StepLog:
    """Every step of a run, one entry per step (numpy arrays of equal length).

    duration   its length in seconds (the step rule's roofline time plus overhead)
    tokens     tokens it computed (prompt chunks plus one per decoding request)
    context    tokens of KV cache held by running requests when it began
    decoders   requests that emitted a non-first output token at its end
    pairs      (query, key) pairs of its prompt chunks' attention (``Setup.attn_flops_per_pair``)
    start      seconds at which the step began (computed on first use, by the given function)
    extra_s    seconds added beyond the roofline (swap, KV read-back, speculative drafts); zeros
               without those features
    flags      what the step contained, bits: 1 recompute (a preempted request's prefill), 2 read-back
               from the host tier, 4 swap in or out (``recompute``, ``readback``, ``swap``: booleans)
    """

    def __init__(self, duration, tokens, context, decoders, start, pairs=None, extra_s=None, flags=None):
        self.duration = duration
        self.extra_s = np.zeros(len(tokens)) if extra_s is None else extra_s
        self.flags = np.zeros(len(tokens), dtype=np.int64) if flags is None else flags
        self.tokens = tokens
        self.context = context
        self.pairs = np.zeros(len(tokens), dtype=np.int64) if pairs is None else pairs
        self.decoders = decoders
        self._start = start

    def __len__(self) -> int:
        return len(self.duration)

    @cached_property
    def start(self) -> np.ndarray:
        return self._start()

    @property
    def recompute(self) -> np.ndarray:
        return (self.flags & RECOMPUTE) > 0

    @property
    def readback(self) -> np.ndarray:
        return (self.flags & READBACK) > 0

    @property
    def swap(self) -> np.ndarray:
        return (self.flags & SWAP) > 0


class SimResult:
    """Per-request arrays in arrival order, plus the step log.

    ``arrival``, ``first_token``, ``finish`` (seconds), ``input_len``, ``output_len`` are numpy
    arrays; ``len(result)`` is the number of requests, and iterating yields ``Request`` records.
    ``steps`` is a ``StepLog``, rebuilt from the engine's run-length log on first use.

    With the memory features on, per-request counters (int arrays, else None): ``preemptions``,
    ``cached_tokens`` (prompt tokens served by the prefix cache, over its admissions),
    ``host_tokens`` (of those, read back from the host tier), ``prompt_tokens`` (prompt tokens
    looked up, over its admissions: a recomputed request counts again) and ``spec_steps`` (decode
    steps of a speculating request).
    """

    COUNTERS = ("preemptions", "cached_tokens", "host_tokens", "prompt_tokens", "spec_steps")

    def __init__(self, arrival, first_token, finish, input_len, output_len, step_runs=None, counters=None):
        for name in self.COUNTERS:
            setattr(self, name, (counters or {}).get(name))
        self.arrival = np.asarray(arrival, dtype=float)
        self.first_token = np.asarray(first_token, dtype=float)
        self.finish = np.asarray(finish, dtype=float)
        self.input_len = np.asarray(input_len, dtype=np.int64)
        self.output_len = np.asarray(output_len, dtype=np.int64)
        self._step_runs = step_runs
        self._steps: StepLog | None = None

    def __len__(self) -> int:
        return len(self.arrival)

    def reordered(self, order) -> "SimResult":
        """The same run with request ``i`` moved to position ``order[i]`` (a permutation)."""
        inv = np.empty(len(order), dtype=np.int64)
        inv[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        counters = {k: getattr(self, k)[inv] for k in self.COUNTERS if getattr(self, k) is not None}
        res = SimResult(self.arrival[inv], self.first_token[inv], self.finish[inv], self.input_len[inv],
                        self.output_len[inv], step_runs=self._step_runs, counters=counters)
        if hasattr(self, "spec_k"):
            res.spec_k = self.spec_k
        return res

    def __iter__(self) -> Iterator[Request]:
        for row in zip(self.arrival.tolist(), self.first_token.tolist(), self.finish.tolist(),
                       self.input_len.tolist(), self.output_len.tolist()):
            yield Request(*row)

    def __getitem__(self, i: int) -> Request:
        return Request(float(self.arrival[i]), float(self.first_token[i]), float(self.finish[i]),
                       int(self.input_len[i]), int(self.output_len[i]))

    def __repr__(self) -> str:
        return f"SimResult({len(self)} requests)"

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token of each request, seconds."""
        return self.first_token - self.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Mean time per output token after the first; 0.0 where output_len is 1."""
        gaps = np.maximum(self.output_len - 1, 1)
        return np.where(self.output_len > 1, (self.finish - self.first_token) / gaps, 0.0)

    @property
    def e2e(self) -> np.ndarray:
        """End-to-end latency of each request, seconds."""
        return self.finish - self.arrival

    @property
    def has_steps(self) -> bool:
        return self._step_runs is not None

    def itl_samples(self) -> tuple[np.ndarray, np.ndarray]:
        """Inter-token gaps as (values, counts): each step's duration, once per decoding request
        (a running request emits one token per step). ``summarize``'s ITL percentiles read this."""
        return self.steps.duration, self.steps.decoders

    @property
    def steps(self) -> StepLog:
        if self._steps is None:
            if self._step_runs is None:
                raise ValueError("this result carries no step log")
            self._steps = self._step_runs()
        return self._steps


def expand_steps(setup, start, tokens, ctx0, grow, dec, count, pairs, extra=None, flags=None) -> StepLog:
    """Rebuild one entry per step from the run-length log, with the engine's exact arithmetic.
    ``extra``/``flags``: seconds beyond the roofline and what the step contained, by log entry."""
    count = np.asarray(count, dtype=np.int64)
    total = int(count.sum())
    run_of_step = np.repeat(np.arange(len(count)), count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    tokens = np.asarray(tokens, dtype=np.int64)[run_of_step]
    context = np.asarray(ctx0, dtype=np.int64)[run_of_step] + np.asarray(grow, dtype=np.int64)[run_of_step] * offset
    pairs = np.asarray(pairs, dtype=np.int64)[run_of_step]
    decoders = np.asarray(dec, dtype=np.int64)[run_of_step]
    duration = setup.step_times(tokens, context, pairs, decoders)
    extra_s = step_flags = None
    if extra:
        first_of_run = np.cumsum(count) - count     # extras are on event steps (runs of one step)
        at = first_of_run[np.fromiter(extra, dtype=np.int64)]
        extra_s = np.zeros(total)
        extra_s[at] = np.fromiter(extra.values(), dtype=float)
        duration[at] = duration[at] + extra_s[at]
        step_flags = np.zeros(total, dtype=np.int64)
        step_flags[at] = np.fromiter(flags.values(), dtype=np.int64)
    return StepLog(duration=duration, tokens=tokens, context=context, pairs=pairs,
                   decoders=decoders,
                   start=lambda: step_starts(start, count, duration), extra_s=extra_s, flags=step_flags)


def step_starts(run_start, count, duration) -> np.ndarray:
    """Start of every step: a run starts at its logged time (idle gaps lie between runs), then adds
    its steps' durations one by one, in the engine's order, so the times are the engine's own."""
    count = np.asarray(count, dtype=np.int64)
    run_start = np.asarray(run_start, dtype=float)
    first_of_run = np.cumsum(count) - count
    starts = run_start[np.repeat(np.arange(len(count)), count)]
    long_runs = np.flatnonzero(count > 1)
    fill = _compiled_fill() if len(long_runs) >= COMPILE_MIN_RUNS else None
    if fill is not None:
        fill(starts, first_of_run, count, np.asarray(duration, dtype=float), run_start)
        return starts
    for i in long_runs.tolist():
        a, k = int(first_of_run[i]), int(count[i])
        starts[a + 1:a + k] = np.cumsum(np.concatenate(([run_start[i]], duration[a:a + k - 1])))[1:]
    return starts


COMPILE_MIN_RUNS = 2000       # runs of several steps worth a compiled loop (a Python loop costs ~1 us each)
_fill = []                    # [the compiled _fill_starts, or None], once tried


def _fill_starts(starts, first_of_run, count, duration, run_start):
    """``step_starts``' loop written out: each step after a run's first starts at the previous
    start plus that step's duration, added one by one (``np.cumsum``'s order: the same floats)."""
    for i in range(len(count)):
        k = count[i]
        if k > 1:
            a = first_of_run[i]
            t = run_start[i]
            for j in range(k - 1):
                t = t + duration[a + j]
                starts[a + j + 1] = t


def _compiled_fill():
    """The compiled ``_fill_starts`` (None without numba, or with ``SIM_NO_COMPILE=1``)."""
    if not _fill:
        from sim._jit import compile_all
        done = compile_all([("_fill_starts", _fill_starts, None, ())])
        _fill.append(None if done is None else done["_fill_starts"])
    return _fill[0]
