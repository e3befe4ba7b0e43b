"""The fast engine: the handbook's step rule, with aggregates instead of per-request loops.

The step rule (one step of one serving instance):

1. Requests whose ``arrival <= now`` join a FIFO waiting queue. If nothing waits or runs, ``now``
   jumps to the next arrival.
2. Budget = ``max_num_batched_tokens``. Running requests, in admission order: a decoding request
   takes 1 token (even past the budget); one still in prefill takes ``min(remaining prompt,
   budget)``; the first that would take 0 or fewer ends the pass.
3. While budget > 0 and fewer than ``max_num_seqs`` run, admit the queue's head if its whole
   reservation (``input_len + output_len`` tokens of KV) fits; it takes ``min(input_len, budget)``.
4. The step lasts ``Setup.step_time(tokens, context, pairs)``, context being the KV held before the
   step and pairs the prompt chunks' (query, key) attention pairs (``setup.attention_pairs``).
5. At the step's end: prompt chunks advance, a completed prompt emits the first token, each decoding
   request emits one token, and a request with all its tokens finishes and frees its reservation.

Why aggregates suffice: prompts complete in admission order (a later request gets prompt tokens only
in a step where every earlier prompt completes), so the running list is always the decoding requests
followed by the prefilling ones, and decoders are never cut off. A step therefore needs only the
number of decoders ``D``, the context sum, and the few prompts at the head of the prefill queue.
Between events (an arrival that can be admitted, a prompt chunk, a finish) every step computes ``D``
tokens over a context that grows by ``D``: such a quiet run is advanced in a tight loop that does the
same float operations in the same order as the plain loop, so the times are bit-for-bit equal.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from typing import Sequence

import numpy as np

from sim.result import SimResult, StepLog
from sim.setup import Setup, attention_pairs

VECTOR_MIN_STEPS = 128       # quiet runs at least this long are advanced with numpy (measured crossover)


def run_requests(setup: Setup, arrival: Sequence[float] | None, input_len: Sequence[int],
                 output_len: Sequence[int], *, concurrency: int | None = None,
                 think_s: float = 0.0) -> SimResult:
    """Simulate requests through one instance.

    Open loop: ``arrival`` holds each request's arrival time, nondecreasing. Closed loop
    (``concurrency`` given, ``arrival`` None): the first ``concurrency`` requests arrive at t = 0 and
    every finish sends the next request ``think_s`` later. Lengths are per request. Inputs are
    assumed validated (see ``sim.simulate`` and ``sim.workload``).
    """
    inp = [int(x) for x in input_len]
    out = [int(x) for x in output_len]
    n = len(inp)
    if concurrency is None:
        arr = [float(x) for x in arrival]
        known = n                       # arrivals known in advance
    else:
        arr = [0.0] * min(concurrency, n) + [math.nan] * (n - min(concurrency, n))
        known = min(concurrency, n)     # closed loop: the rest are issued at finishes
    first = array("d", [math.nan]) * n
    fin = array("d", [math.nan]) * n

    budget_max, max_seqs, kv_cap = setup.max_num_batched_tokens, setup.max_num_seqs, setup.kv_capacity_tokens
    two_p, flops = 2 * setup.params, setup.peak_flops * setup.mfu
    w_bytes, kv_bytes, bw, overhead = setup.weight_bytes, setup.kv_bytes_per_token, setup.bandwidth, setup.step_overhead
    comm = setup.comm_s_per_token       # seconds per computed token (0: the handbook's rule)
    keep, serial = 1 - setup.kv_serial, setup.kv_serial   # KV read under the max / after it (1, 0: handbook)
    kv_ratio = setup.kv_bandwidth_ratio                   # KV read speed relative to weights (1: handbook)
    step_time = setup.step_time

    now = 0.0
    step = 0                    # index of the next step
    visible = 0                 # requests [0, visible) have arrived by now
    admitted = 0                # requests [0, admitted) were admitted (FIFO): waiting = [admitted, visible)
    prefill: deque[list[int]] = deque()   # [request, prompt tokens left], admission order
    finishes: list[tuple[int, int]] = []  # heap of (step at whose end it finishes, request) for decoders
    decoders = 0                # D: running requests past their prompt
    running = 0
    context = 0                 # sum over running of (prompt tokens computed + tokens generated)
    kv_used = 0                 # reserved tokens
    done = 0
    # Run-length step log: each entry is `count` steps from `start`, each computing `tokens` tokens
    # over a context that starts at `ctx0` and grows by `grow` per step, with `dec` decoders.
    # Event steps also log their prompt chunks' attention pairs (quiet runs have none).
    log_start = array("d")
    log_tokens, log_ctx0, log_grow, log_dec, log_count, log_pairs = (array("q") for _ in range(6))

    while done < n:
        while visible < known and arr[visible] <= now:
            visible += 1
        if running == 0 and admitted == visible:
            now = arr[visible]
            continue

        # A quiet run: only decoders run and no admission can happen before the next finish.
        if not prefill and decoders and (
                admitted == visible or decoders >= budget_max or running >= max_seqs
                or kv_used + inp[admitted] + out[admitted] > kv_cap):
            quiet = finishes[0][0] - step          # steps before the next finishing step
            if quiet > 0:
                limit = arr[visible] if admitted == visible and visible < known else math.inf
                if quiet >= VECTOR_MIN_STEPS:
                    t, c, k = _quiet_run_vectorized(setup, now, context, decoders, quiet, limit)
                else:
                    # Setup.step_time(decoders, c) written out (same operations, same order): a
                    # call and a builtin max() per step would cost more than the step itself.
                    compute, comm_d = two_p * decoders / flops, comm * decoders
                    t, c, k = now, context, 0
                    while k < quiet:
                        kv = kv_bytes * c / kv_ratio
                        memory = (w_bytes + kv * keep) / bw
                        t += (memory if memory > compute else compute) + kv * serial / bw + overhead + comm_d
                        c += decoders
                        k += 1
                        if limit <= t:
                            break
                log_start.append(now); log_tokens.append(decoders); log_ctx0.append(context)
                log_grow.append(decoders); log_dec.append(decoders); log_count.append(k); log_pairs.append(0)
                now, context, step = t, c, step + k
                continue

        # An event step: the general rule, touching only the head of the prefill queue.
        budget = budget_max - decoders
        tokens = decoders
        pairs = 0
        completed = []
        for entry in prefill:
            give = min(entry[1], budget)
            if give <= 0:
                break
            budget -= give
            tokens += give
            pairs += attention_pairs(inp[entry[0]] - entry[1], give)
            entry[1] -= give
            if entry[1] == 0:
                completed.append(entry[0])
        for _ in completed:
            prefill.popleft()
        while budget > 0 and running < max_seqs and admitted < visible:
            r = admitted
            if kv_used + inp[r] + out[r] > kv_cap:
                break
            kv_used += inp[r] + out[r]
            running += 1
            admitted += 1
            give = min(inp[r], budget)
            budget -= give
            tokens += give
            pairs += attention_pairs(0, give)
            if give == inp[r]:
                completed.append(r)
            else:
                prefill.append([r, inp[r] - give])

        log_start.append(now); log_tokens.append(tokens); log_ctx0.append(context)
        log_grow.append(0); log_dec.append(decoders); log_count.append(1); log_pairs.append(pairs)
        now += step_time(tokens, context, pairs)
        context += tokens

        freed = []
        while finishes and finishes[0][0] == step:
            freed.append(heapq.heappop(finishes)[1])
            decoders -= 1
        for r in completed:
            first[r] = now
            context += 1
            if out[r] == 1:
                freed.append(r)
            else:
                heapq.heappush(finishes, (step + out[r] - 1, r))
                decoders += 1
        for r in freed:
            fin[r] = now
            context -= inp[r] + out[r]
            kv_used -= inp[r] + out[r]
            running -= 1
            done += 1
            if known < n and concurrency is not None:
                arr[known] = now + think_s
                known += 1
        step += 1

    runs = tuple(np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, a.typecode)
                 for a in (log_start, log_tokens, log_ctx0, log_grow, log_dec, log_count, log_pairs))
    return SimResult(arr, np.frombuffer(first), np.frombuffer(fin), inp, out,
                     step_runs=lambda: _expand_steps(setup, *runs))


def _quiet_run_vectorized(setup: Setup, now, context, decoders, quiet, limit):
    """The tight loop's result for a long quiet run, in numpy with the same float operations.

    Step j computes ``decoders`` tokens over ``context + decoders * j``; the run stops after step
    ``quiet - 1`` or after the first step that ends at or past ``limit``. The cumulative sum adds the
    durations one by one from ``now``, exactly as the loop does. Returns (time, context, steps).
    """
    steps = quiet
    if limit != math.inf:
        # Steps only lengthen within a run, so the first one's length bounds how many fit before limit.
        steps = max(1, min(quiet, int((limit - now) / setup.step_time(decoders, context)) + 2))
    ctx = context + decoders * np.arange(steps, dtype=np.int64)
    duration = setup.step_times(decoders, ctx)
    ends = np.cumsum(np.concatenate(([now], duration)))[1:]
    k = steps
    if limit != math.inf:
        k = min(steps, int(np.searchsorted(ends, limit, side="left")) + 1)
    return float(ends[k - 1]), context + decoders * k, k


def _expand_steps(setup: Setup, start, tokens, ctx0, grow, dec, count, pairs) -> StepLog:
    """Rebuild one entry per step from the run-length log, with the engine's exact arithmetic."""
    count = np.asarray(count, dtype=np.int64)
    total = int(count.sum())
    run_of_step = np.repeat(np.arange(len(count)), count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    tokens = np.asarray(tokens, dtype=np.int64)[run_of_step]
    context = np.asarray(ctx0, dtype=np.int64)[run_of_step] + np.asarray(grow, dtype=np.int64)[run_of_step] * offset
    pairs = np.asarray(pairs, dtype=np.int64)[run_of_step]
    duration = setup.step_times(tokens, context, pairs)
    return StepLog(duration=duration, tokens=tokens, context=context, pairs=pairs,
                   decoders=np.asarray(dec, dtype=np.int64)[run_of_step],
                   start=lambda: _step_starts(start, count, duration))


def _step_starts(run_start, count, duration) -> np.ndarray:
    """Start of every step: a run starts at its logged time (idle gaps lie between runs), then adds
    its steps' durations one by one, in the engine's order, so the times are the engine's own."""
    first_of_run = np.cumsum(count) - count
    starts = np.asarray(run_start, dtype=float)[np.repeat(np.arange(len(count)), count)]
    for i in np.flatnonzero(count > 1).tolist():
        a, k = int(first_of_run[i]), int(count[i])
        starts[a + 1:a + k] = np.cumsum(np.concatenate(([run_start[i]], duration[a:a + k - 1])))[1:]
    return starts
