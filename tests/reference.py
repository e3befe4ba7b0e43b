"""The handbook's step rule as a plain loop: every running request is touched at every step.

This is the yardstick the fast engine (``sim.engine``) is tested against. It is written to be
obviously right, not fast: one object per request, one pass over the running list per step, and
every token's timestamp kept.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sim import Setup


@dataclass
class Req:
    rid: int
    arrival: float
    input_len: int
    output_len: int
    prompt_done: int = 0
    generated: int = 0
    first_token: float | None = None
    finish: float | None = None
    token_times: list[float] = field(default_factory=list)


def poisson_arrivals(rate: float, num_requests: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(num_requests):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def reference_run(setup: Setup, arrivals, input_lens, output_lens, *, closed_loop=None):
    """Run the step rule literally. Returns the list of finished ``Req`` in arrival order.

    ``closed_loop=(concurrency, think_s)``: ``arrivals`` is ignored; the first ``concurrency``
    requests arrive at t = 0, and each finish releases the next request ``think_s`` later.
    """
    n = len(input_lens)
    if closed_loop is None:
        reqs = [Req(i, float(arrivals[i]), int(input_lens[i]), int(output_lens[i])) for i in range(n)]
        pending = list(reqs)  # future arrivals, in order
    else:
        concurrency, think_s = closed_loop
        reqs = [Req(i, float("nan"), int(input_lens[i]), int(output_lens[i])) for i in range(n)]
        for r in reqs[:concurrency]:
            r.arrival = 0.0
        pending = list(reqs[:concurrency])
        issued = min(concurrency, n)

    waiting: list[Req] = []
    running: list[Req] = []
    kv_used = 0
    now = 0.0
    done = 0
    while done < n:
        while pending and pending[0].arrival <= now:
            waiting.append(pending.pop(0))
        if not waiting and not running:
            now = pending[0].arrival
            continue

        budget = setup.max_num_batched_tokens
        work: list[tuple[Req, int]] = []
        for r in running:
            if r.prompt_done < r.input_len:
                give = min(r.input_len - r.prompt_done, budget)
            else:
                give = 1
            if give <= 0:
                break
            work.append((r, give))
            budget -= give
        while (waiting and budget > 0 and len(running) < setup.max_num_seqs
               and kv_used + waiting[0].input_len + waiting[0].output_len <= setup.kv_capacity_tokens):
            r = waiting.pop(0)
            kv_used += r.input_len + r.output_len
            running.append(r)
            give = min(r.input_len, budget)
            work.append((r, give))
            budget -= give

        tokens = sum(give for _, give in work)
        context = sum(r.prompt_done + r.generated for r in running)
        # Prefill attention: each new prompt token attends to every earlier token and to itself.
        pairs = sum(r.prompt_done + j + 1 for r, give in work if r.prompt_done < r.input_len for j in range(give))
        decoders = sum(1 for r, _ in work if r.prompt_done >= r.input_len)
        now += setup.step_time(tokens, context, pairs, decoders)

        for r, give in work:
            if r.prompt_done < r.input_len:
                r.prompt_done += give
                if r.prompt_done == r.input_len:
                    r.generated = 1
                    r.first_token = now
                    r.token_times.append(now)
            else:
                r.generated += 1
                r.token_times.append(now)
            if r.generated == r.output_len:
                r.finish = now
                running.remove(r)
                kv_used -= r.input_len + r.output_len
                done += 1
                if closed_loop is not None and issued < n:
                    nxt = reqs[issued]
                    nxt.arrival = now + think_s
                    pending.append(nxt)
                    issued += 1
    return reqs


def check_against_reference(setup: Setup, n: int, seed: int, load: float, closed: bool):
    """Run a random small workload (uniform prompts of 1-60 tokens, long-tailed outputs) through the
    fast engine and the plain loop, open loop at ``load`` requests per full-budget step or closed
    loop with 3 clients, and assert every request's first-token and finish times are equal.
    Returns the fast engine's result."""
    import numpy as np

    from sim import lengths, run, workload
    inp, out = lengths.uniform(1, 60), lengths.lognormal(30, 1.0, high=200)
    if closed:
        w = workload.closed_loop(3, n, inp, out, think_s=0.01, seed=seed)
        ref = reference_run(setup, None, w.input_len, w.output_len, closed_loop=(3, 0.01))
    else:
        w = workload.poisson(load / setup.step_time(setup.max_num_batched_tokens, 0), n, inp, out, seed=seed)
        ref = reference_run(setup, w.arrival, w.input_len, w.output_len)
    res = run(setup, w)
    assert np.array_equal(res.first_token, [r.first_token for r in ref])
    assert np.array_equal(res.finish, [r.finish for r in ref])
    return res
