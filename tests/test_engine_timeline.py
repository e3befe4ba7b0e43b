"""Hand-worked timelines, asserted step by step and request by request.

The setup is chosen so that every time is an exact binary fraction: one "tick" is 1/1024 s, a
step computing T tokens over C tokens of context lasts max(T, 2 + kv * C) ticks, and sums of
ticks are exact in floating point. Each case below is worked out in its comment.
"""

import pytest

from sim import Setup
from sim.engine import run_requests

TICK = 1 / 1024


def tiny(kv=0, budget=4, seqs=8, cap=1000, overhead=0.0):
    # compute: 2 * 0.5 * T / (1024 * 1) = T ticks; memory: (2 + kv * C) / 1024 = 2 + kv*C ticks
    return Setup(params=0.5, weight_bytes=2, kv_bytes_per_token=kv, kv_capacity_tokens=cap,
                 peak_flops=1024, bandwidth=1024, mfu=1.0, step_overhead=overhead,
                 max_num_batched_tokens=budget, max_num_seqs=seqs)


def ticks(x):
    return [round(v / TICK, 9) for v in x]


def test_single_request_chunked_prefill_then_decode():
    # arrives at 1 s; budget 4, prompt 5: step0 takes 4 prompt tokens (4 ticks), step1 the last 1
    # (max(1, 2) = 2 ticks) and emits token 1; steps 2 and 3 decode tokens 2 and 3 (2 ticks each).
    res = run_requests(tiny(), [1.0], [5], [3])
    assert res.first_token[0] == 1.0 + 6 * TICK
    assert res.finish[0] == 1.0 + 10 * TICK
    steps = res.steps
    assert steps.tokens.tolist() == [4, 1, 1, 1]
    assert steps.decoders.tolist() == [0, 0, 1, 1]
    assert ticks(steps.start - 1.0) == [0, 4, 6, 8]
    assert ticks(steps.duration) == [4, 2, 2, 2]
    assert res.ttft[0] == 6 * TICK
    assert res.tpot[0] == 2 * TICK


def test_budget_shared_between_prefills_in_admission_order():
    # r0 (prompt 6, out 2) and r1 (prompt 3, out 2) both arrive at 0; budget 4.
    # step0: r0 takes 4, budget 0, r1 is not admitted.            4 tokens, 4 ticks -> t=4
    # step1: r0 takes its last 2; r1 admitted, takes 2.            4 tokens, 4 ticks -> t=8, r0 first
    # step2: r0 decodes 1 (finishes); r1 takes its last 1.         2 tokens, 2 ticks -> t=10, r1 first
    # step3: r1 decodes 1 and finishes.                            1 token,  2 ticks -> t=12
    res = run_requests(tiny(), [0.0, 0.0], [6, 3], [2, 2])
    assert ticks(res.first_token) == [8, 10]
    assert ticks(res.finish) == [10, 12]
    assert res.steps.tokens.tolist() == [4, 4, 2, 1]
    assert res.steps.context.tolist() == [0, 4, 9, 4]   # prompt computed + tokens generated
    assert res.steps.decoders.tolist() == [0, 0, 1, 1]


def test_context_makes_decode_memory_bound():
    # kv = 1 byte per token: a step lasts max(T, 2 + C) ticks.
    # step0: prompt 4 over C=0 -> max(4, 2) = 4 -> t=4, first token (context becomes 5)
    # step1: decode over C=5 -> 7 ticks -> t=11; step2: over C=6 -> 8 ticks -> t=19, finish
    res = run_requests(tiny(kv=1), [0.0], [4], [3])
    assert ticks(res.steps.duration) == [4, 7, 8]
    assert ticks(res.first_token) == [4]
    assert ticks(res.finish) == [19]


def test_kv_reservation_blocks_the_head_of_the_queue():
    # cap 10: r0 reserves 4+4 = 8; r1 (1+2 = 3) does not fit until r0 frees its reservation, and
    # r2 (1+1), which would fit, waits behind it (FIFO).
    # step0: r0 prefill 4 (4 ticks) -> t=4 first; steps 1-3 decode (2 ticks each) -> r0 done at 10
    # step4 at t=10: r1 admitted (1 token) and r2 admitted (1 token): 2 tokens, 2 ticks -> t=12;
    #   both emit their first token; r2 (out 1) finishes at once
    # step5: r1 decodes its 2nd token -> t=14
    res = run_requests(tiny(cap=10), [0.0, 0.0, 0.0], [4, 1, 1], [4, 2, 1])
    assert ticks(res.first_token) == [4, 12, 12]
    assert ticks(res.finish) == [10, 14, 12]
    assert res.steps.tokens.tolist() == [4, 1, 1, 1, 2, 1]


def test_max_num_seqs_caps_the_running_batch():
    # one sequence at a time: r1 is admitted in the step after r0 finishes.
    # r0: step0 prompt 2 (2 ticks) first at 2; step1 decode -> 4 finish.
    # r1: step2 prompt 2 -> 6 first; step3 -> 8 finish.
    res = run_requests(tiny(seqs=1), [0.0, 0.0], [2, 2], [2, 2])
    assert ticks(res.first_token) == [2, 6]
    assert ticks(res.finish) == [4, 8]


def test_decoders_fill_the_budget_and_stall_admission():
    # budget 2: r0 and r1 (prompt 1, out 3) are admitted in step0 and then decode 2 tokens per
    # step, leaving no budget: r2 waits until both finish (end of step2), then runs alone.
    res = run_requests(tiny(budget=2), [0.0, 0.0, 0.0], [1, 1, 1], [3, 3, 2])
    assert res.steps.tokens.tolist() == [2, 2, 2, 1, 1]
    assert ticks(res.first_token) == [2, 2, 8]
    assert ticks(res.finish) == [6, 6, 10]


def test_arrival_during_a_step_waits_for_the_next_step():
    # r0 arrives at 0 (prompt 4 -> 4 ticks); r1 arrives at 1 tick, during step0, and is admitted at
    # step1 (t=4) next to r0's first decode: 1 + 2 tokens = 3 ticks -> t=7.
    res = run_requests(tiny(), [0.0, TICK], [4, 2], [2, 2])
    assert ticks(res.first_token) == [4, 7]
    assert res.steps.tokens.tolist() == [4, 3, 1]
    assert ticks(res.finish) == [7, 9]


def test_idle_instance_jumps_to_the_next_arrival():
    res = run_requests(tiny(), [0.0, 5.0], [2, 2], [1, 1])
    assert ticks(res.finish) == [2, 5 * 1024 + 2]
    assert ticks(res.steps.start) == [0, 5 * 1024]


def test_one_token_output_finishes_with_its_prompt():
    res = run_requests(tiny(), [0.0], [3], [1])
    assert res.first_token[0] == res.finish[0] == 3 * TICK
    assert res.tpot[0] == 0.0
    assert res.steps.decoders.tolist() == [0]


def test_step_overhead_is_added_to_every_step():
    res = run_requests(tiny(overhead=TICK), [0.0], [4], [2])
    assert ticks(res.steps.duration) == [5, 3]


def test_quiet_runs_are_logged_step_by_step():
    # A long decode (no arrivals) goes through the fast path; its log still has one entry per step.
    res = run_requests(tiny(kv=1), [0.0], [2], [200])
    steps = res.steps
    assert len(steps) == 200
    assert steps.context.tolist() == [0] + list(range(3, 3 + 199))
    assert ticks(steps.duration[1:]) == [2 + c for c in range(3, 3 + 199)]
    assert steps.start[1:].tolist() == pytest.approx((steps.start + steps.duration)[:-1].tolist(), abs=1e-12)


def test_closed_loop_sends_the_next_request_when_one_finishes():
    # 1 client, think time 3 ticks: r1 arrives 3 ticks after r0 finishes.
    res = run_requests(tiny(), None, [2, 2], [2, 2], concurrency=1, think_s=3 * TICK)
    assert ticks(res.arrival) == [0, 7]
    assert ticks(res.finish) == [4, 11]
