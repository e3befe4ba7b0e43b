"""Plain references for the fleet's rules, written to be obviously right rather than fast.

``plain_instance_run``: the step rule with requests that may arrive prefilled (PD's decode side),
one object per request, every running request touched at every step. Decoders take their token
first (a prefilled request is a decoder from its admission on), then prompts in admission order,
then the queue's head is admitted while budget, sequences and KV allow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PlainReq:
    arrival: float
    input_len: int
    output_len: int
    prefilled: bool
    prompt_done: int = 0
    generated: int = 0
    first_token: float | None = None
    finish: float | None = None


def plain_instance_run(setup, arrivals, inputs, outputs, prefilled):
    reqs = [PlainReq(a, i, o, p) for a, i, o, p in zip(arrivals, inputs, outputs, prefilled)]
    for r in reqs:
        if r.prefilled:                       # its prompt ran elsewhere; its first token came with it
            r.prompt_done, r.generated = r.input_len, 1
    pending, waiting, running = list(reqs), [], []
    kv_used, now, done = 0, 0.0, 0
    while done < len(reqs):
        while pending and pending[0].arrival <= now:
            waiting.append(pending.pop(0))
        if not waiting and not running:
            now = pending[0].arrival
            continue
        budget = setup.max_num_batched_tokens
        work = []
        context = sum(r.prompt_done + r.generated for r in running)
        for r in running:                     # decoders: one token each, even past the budget
            if r.prompt_done == r.input_len:
                work.append((r, 1))
                budget -= 1
        for r in running:                     # prompts, in admission order, while budget lasts
            if r.prompt_done < r.input_len:
                give = min(r.input_len - r.prompt_done, budget)
                if give <= 0:
                    break
                work.append((r, give))
                budget -= give
        while (waiting and budget > 0 and len(running) < setup.max_num_seqs
               and kv_used + waiting[0].input_len + waiting[0].output_len <= setup.kv_capacity_tokens):
            r = waiting.pop(0)
            kv_used += r.input_len + r.output_len
            running.append(r)
            if r.prefilled:
                context += r.input_len + 1    # the KV it brought is read by this step
                work.append((r, 1))
                budget -= 1
            else:
                give = min(r.input_len, budget)
                work.append((r, give))
                budget -= give
        tokens = sum(g for _, g in work)
        pairs = sum(r.prompt_done + j + 1 for r, g in work if r.prompt_done < r.input_len for j in range(g))
        decoders = sum(1 for r, _ in work if r.prompt_done >= r.input_len)
        now += setup.step_time(tokens, context, pairs, decoders)
        for r, give in work:
            if r.prompt_done < r.input_len:
                r.prompt_done += give
                if r.prompt_done == r.input_len:
                    r.generated = 1
                    r.first_token = now
            else:
                r.generated += 1
            if r.generated == r.output_len:
                r.finish = now
                running.remove(r)
                kv_used -= r.input_len + r.output_len
                done += 1
    return reqs
