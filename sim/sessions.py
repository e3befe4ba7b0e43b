"""Workloads whose prompts share prefixes: multi-turn chat sessions and a shared-system-prompt mix.

    multi_turn(rate, sessions, turns, system_len, message_len, output_len, think_s, ...)
        Sessions start at Poisson times (``rate`` sessions/s). Turn t's prompt is the system prompt,
        the whole history (every earlier message and answer) and a new message; run by ``sim.run``,
        turn t + 1 arrives ``think_s`` after turn t's answer finishes (the workload's arrival times
        for later turns are then a schedule the run replaces). A fleet runs the schedule as given:
        turn t + 1 at turn t's arrival + ``think_s`` (the fleet's arrivals are open loop).
    shared_prompts(rate, n, prompts, system_len, input_len, output_len, skew=1.0, ...)
        Poisson requests, each a system prompt drawn from ``prompts`` of them with Zipf popularity
        (prompt k with weight 1 / (k + 1)^skew) followed by its own ``input_len`` tokens.

Both carry prefix identity (``Workload.prefix``, see ``sim.kv.prefix_cache``): system prompt k is
key k; session s is key ``prompts + s`` and covers its prompt and answer. Lengths are ints or
``sim.lengths`` distributions drawn from ``seed`` on streams of their own; system prompts are chosen
on another, so arrival times never move when lengths change.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from sim.engine import Instance
from sim.lengths import as_length, draw_lengths
from sim.simulate import poisson_arrivals
from sim.validate import check_int, check_number
from sim.workload_spec import Workload


def multi_turn(rate: float, sessions: int, turns: int, system_len: int, message_len, output_len,
               think_s: float = 5.0, prompts: int = 1, skew: float = 1.0, seed: int = 0):
    """Chat sessions of ``turns`` turns each (see the module's docstring)."""
    check_number("rate", rate, 0, note="(sessions per second)")
    check_int("sessions", sessions, 1)
    check_int("turns", turns, 1)
    check_int("system_len", system_len, 0)
    check_number("think_s", think_s, 0, strict=False, note="(seconds)")
    check_int("seed", seed, None)
    n_s, n_t = int(sessions), int(turns)
    starts = poisson_arrivals(rate, n_s, seed)
    system = _popular(prompts, skew, n_s, seed)
    msg = as_length("message_len", message_len).draw(n_s * n_t, np.random.default_rng([int(seed) % 2**63, 1]))
    out = as_length("output_len", output_len).draw(n_s * n_t, np.random.default_rng([int(seed) % 2**63, 2]))
    rows = []                                  # (scheduled arrival, session, turn, input, output)
    for s in range(n_s):
        history = int(system_len)
        for t in range(n_t):
            m, o = int(msg[s * n_t + t]), int(out[s * n_t + t])
            rows.append((starts[s] + t * think_s, s, t, history + m, o))
            history += m + o
    rows.sort(key=lambda row: (row[0], row[1]))
    index = {(s, t): i for i, (_, s, t, _, _) in enumerate(rows)}
    prefix, follows = [], []
    for _, s, t, inp, o in rows:
        segs = ((int(system[s]), int(system_len)),) if system_len else ()
        prefix.append(segs + ((prompts + s, inp + o),))
        follows.append(index[(s, t - 1)] if t else -1)
    return Workload("multi_turn", tuple(r[0] for r in rows), tuple(r[3] for r in rows),
                    tuple(r[4] for r in rows), think_s=float(think_s), prefix=tuple(prefix),
                    follows=tuple(follows), session=tuple(r[1] for r in rows))


def shared_prompts(rate: float, num_requests: int, prompts: int, system_len: int, input_len, output_len,
                   skew: float = 1.0, seed: int = 0):
    """Poisson requests behind ``prompts`` shared system prompts of ``system_len`` tokens."""
    check_number("rate", rate, 0, note="(requests per second)")
    check_int("num_requests", num_requests, 1)
    n = int(num_requests)
    check_int("system_len", system_len, 1)
    check_int("seed", seed, None)
    system = _popular(prompts, skew, n, seed)
    user, out = draw_lengths(n, input_len, output_len, seed)
    return Workload("shared_prompts", tuple(poisson_arrivals(rate, n, seed)),
                    tuple(int(system_len) + int(u) for u in user), tuple(int(o) for o in out),
                    prefix=tuple(((int(k), int(system_len)),) for k in system))


def _popular(prompts, skew, n, seed):
    check_int("prompts", prompts, 1)
    check_number("skew", skew, 0, strict=False, note="(Zipf exponent)")
    weights = 1.0 / np.arange(1, int(prompts) + 1) ** skew
    return np.random.default_rng([int(seed) % 2**63, 3]).choice(int(prompts), size=n, p=weights / weights.sum())


def run_sessions(setup, workload):
    """One instance, each follow-up turn arriving ``think_s`` after its previous turn finishes.

    The driver merges the first turns (in schedule order) with the follow-ups; a follow-up due
    before the driver's next submission is submitted from the finish callback, so every request is
    in the instance before the first step that starts at or after its arrival."""
    inp, out, prefix, follows = workload.input_len, workload.output_len, workload.prefix, workload.follows
    think = workload.think_s
    nxt = [-1] * len(inp)
    for i, f in enumerate(follows):
        if f >= 0:
            nxt[f] = i
    firsts = deque((workload.arrival[i], i) for i in range(len(inp)) if follows[i] < 0)
    later: deque = deque()
    local: list[int] = []
    horizon = [np.inf]

    def submit(t, w):
        inst.submit(t, inp[w], out[w], prefix=prefix[w])
        local.append(w)

    def on_finish(lid, now):
        w = nxt[local[lid]]
        if w >= 0:
            t = now + think
            if t < horizon[0]:
                submit(t, w)
            else:
                later.append((t, w))

    inst = Instance(setup, on_finish=on_finish)
    while firsts or later:
        src = firsts if not later or (firsts and firsts[0][0] <= later[0][0]) else later
        t = src[0][0]
        horizon[0] = t
        inst.advance(t)                        # follow-ups it queues arrive at t or later
        submit(*src.popleft())
    horizon[0] = np.inf
    inst.advance()
    return inst.result().reordered(local)
