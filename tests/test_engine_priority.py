"""The engine's ``Paged(policy="priority")`` against vLLM V1's priority scheduler as
tests/vllm_reference.py states it, bit for bit: first-token and finish times, preemptions, and
every model step's start, tokens and context.

The rule (vLLM's ``SchedulerConfig.policy = "priority"``): the waiting queue is ordered by
(priority, arrival, id), smaller first; when blocks run short the victim is the running request
with the largest (priority, arrival), the first in admission order on a tie; a victim scheduled
earlier in the same pass hands its tokens back to the budget; a request that is the victim itself
ends the pass, and the requests after it get nothing that step. Timelines are in ticks of 1/1024 s
on tests/conftest.py's instance (a step of T tokens lasts max(T, 2) ticks when kv = 0).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from sim.engine import Instance, run_requests
from sim.kv import Paged
from engine_parity import assert_same, driven_run
from vllm_reference import engine_mismatches, vllm_run, vllm_stepper

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def priority_runs(draw, levels=(-1, 0, 1, 2), gaps=(0.0, 0.0, 0.001, 0.01, 0.05)):
    B = draw(st.sampled_from([1, 2, 4, 16]))
    budget = draw(st.integers(2, 24))
    seqs = draw(st.integers(1, min(8, budget)))
    n = draw(st.integers(1, 12))
    inputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    fit = max(i + o for i, o in zip(inputs, outputs))
    blocks = draw(st.integers(-(-fit // B), -(-fit // B) * 4))      # tight to roomy: preemptions
    watermark = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3]))
    kv = draw(st.sampled_from([0, 1]))
    setup = tiny_setup(kv=kv, budget=budget, seqs=seqs, cap=blocks * B).replace(
        kv=Paged(block_size=B, watermark=watermark, policy="priority"))
    arrivals = list(np.cumsum(draw(st.lists(st.sampled_from(gaps), min_size=n, max_size=n))))
    priorities = draw(st.lists(st.sampled_from(levels), min_size=n, max_size=n))
    return setup, arrivals, inputs, outputs, priorities


@PROFILE
@given(priority_runs())
def test_priority_engine_equals_the_vllm_v1_reference(case):
    setup, arrivals, inputs, outputs, priorities = case
    res = run_requests(setup, arrivals, inputs, outputs, priorities=priorities)
    ref = vllm_run(setup, arrivals, inputs, outputs, priorities=priorities)
    assert_same(res, ref)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priority_runs(levels=(3,), gaps=(0.001, 0.01, 0.05)))
def test_one_priority_for_all_runs_as_fcfs(case):
    """Equal priorities fall back to arrival order: with distinct arrivals the queue and the victim
    (the latest arrival among the running) are FCFS's. (On equal arrivals vLLM's victim is the
    first of them in the running order, FCFS's the last: the first test covers that.)"""
    setup, arrivals, inputs, outputs, priorities = case
    res = run_requests(setup, arrivals, inputs, outputs, priorities=priorities)
    fcfs = run_requests(setup.replace(kv=Paged(block_size=setup.kv.block_size, watermark=setup.kv.watermark)),
                        arrivals, inputs, outputs)
    for field in ("first_token", "finish", "preemptions"):
        assert np.array_equal(getattr(res, field), getattr(fcfs, field))
    assert np.array_equal(res.steps.start, fcfs.steps.start)


# --- hand-worked timelines ----------------------------------------------------------------------

def test_admission_order_by_priority_then_arrival():
    """One seat; three 2-token prompts of 1 output token at t = 0 with priorities 2, 0, 1: each
    runs alone for max(2, 2) = 2 ticks, in priority order 1, 2, 0: finishes at 6, 2, 4 ticks."""
    setup = tiny_setup(budget=8, seqs=1, cap=64).replace(kv=Paged(block_size=4, policy="priority"))
    res = run_requests(setup, [0.0, 0.0, 0.0], [2, 2, 2], [1, 1, 1], priorities=[2, 0, 1])
    assert ticks(res.finish) == [6, 2, 4]
    # Equal priorities fall back to arrival: 0, 1, 2.
    res = run_requests(setup, [0.0, 0.0, 0.0], [2, 2, 2], [1, 1, 1], priorities=[7, 7, 7])
    assert ticks(res.finish) == [2, 4, 6]


def test_victim_is_the_least_urgent_not_the_last_admitted():
    """Blocks of 2, 4 blocks. r0 (priority 5) arrives at 0, r1 (priority 0) at 1 tick; 3-token
    prompts, 4 output tokens. t=0: r0 prefills 3 (2 blocks) until 3. t=3: r0 decodes (4 slots, 2
    blocks), r1 is admitted (2 blocks: 0 free): 4 tokens, until 7. t=7: r0 needs a 3rd block;
    the victim is max(priority, arrival) = r0 itself (FCFS would take r1, the tail): the pass
    ends with nothing scheduled, so no model runs. r1 then decodes alone at 7, 9, 11 (a 3rd block
    at 9; r0's 5 tokens need 3 blocks, 1 free: it waits), finishing at 13; r0 prefills its 5
    tokens 13-18 and decodes its last token 18-20."""
    setup = tiny_setup(budget=8, seqs=3, cap=8).replace(kv=Paged(block_size=2, policy="priority"))
    res = run_requests(setup, [0.0, TICK], [3, 3], [4, 4], priorities=[5, 0])
    assert ticks(res.first_token) == [3, 7] and ticks(res.finish) == [20, 13]
    assert res.preemptions.tolist() == [1, 0]
    assert ticks(res.steps.start) == [0, 3, 7, 9, 11, 13, 18]
    fcfs = run_requests(setup.replace(kv=Paged(block_size=2)), [0.0, TICK], [3, 3], [4, 4])
    assert fcfs.preemptions.tolist() == [0, 1] and ticks(fcfs.finish) == [11, 19]


def test_a_decoder_that_is_its_own_victim_ends_the_pass():
    """Blocks of 1, 6 blocks; 1-token prompts, 4 output tokens; r0 (priority 0) and r1 (5) at 0,
    r2 (1) at 1 tick. t=0: r0, r1 prefill (2 ticks). t=2: both decode (a block each) and r2 is
    admitted: 5 blocks held, 3 tokens until 5. t=5: r0 takes the last block; r1 needs one, and the
    victim max(priority, arrival) is r1 itself: the pass ends, so r2, after it in the running
    order, decodes nothing this step: 1 token, 5-7 (r2's 2nd token comes at 9, not 7)."""
    setup = tiny_setup(budget=8, seqs=3, cap=6).replace(kv=Paged(block_size=1, policy="priority"))
    res = run_requests(setup, [0.0, 0.0, TICK], [1, 1, 1], [4, 4, 4], priorities=[0, 5, 1])
    assert ticks(res.steps.start) == [0, 2, 5, 7, 9, 13, 15]
    assert res.steps.tokens.tolist() == [2, 3, 1, 2, 4, 1, 4]
    assert ticks(res.finish) == [9, 19, 15] and res.preemptions.tolist() == [0, 2, 0]


def test_a_decoder_that_is_its_own_victim_ends_the_pass_before_the_prompts():
    """Blocks of 1, 8 blocks, budget 2. r0 (priority 1: 5-token prompt, 4 outputs) at 0; r1 (0: 3
    tokens) and r2 (0: 1 token) at 3 ticks. At 8 r0 holds 6 blocks and r1 2 (of its 3-token prompt)
    : r0 needs a block, and the victim max(priority, arrival) is r0 itself, so the pass ends with
    nothing scheduled and no model runs; the next pass gives r1 its last prompt token and, no one
    preempted in it, admits r2: 2 tokens at 8 (r1's chunk does not run alone in the preempting
    pass, which would have held r2 back to 10)."""
    setup = tiny_setup(budget=2, seqs=3, cap=8).replace(kv=Paged(block_size=1, policy="priority"))
    args = ([0.0, 3 * TICK, 3 * TICK], [5, 3, 1], [4, 2, 5])
    res = run_requests(setup, *args, priorities=[1, 0, 0])
    assert ticks(res.steps.start)[4] == 8 and res.steps.tokens.tolist()[4] == 2
    assert ticks(res.finish) == [28, 12, 18] and res.preemptions.tolist() == [1, 0, 0]
    assert engine_mismatches(res, vllm_run(setup, *args, priorities=[1, 0, 0])) == []


# --- vLLM's priority tests (tests/test_vllm_scheduler_parity.py), on the engine too -------------

def engine_agrees(stepper, start=0.0):
    """Run the stepper's requests to the end on the reference and on the engine (same setup,
    policy, start time) and return where they differ (empty: bit for bit)."""
    stepper.run()
    reqs = stepper.reqs
    order = sorted(range(len(reqs)), key=lambda i: reqs[i].arrival)   # the engine takes arrivals in order
    kv = stepper.setup.kv
    setup = stepper.setup.replace(
        kv=Paged(block_size=kv.block_size, watermark=kv.watermark, policy=stepper.policy),
        speculative=stepper.spec)
    inst = Instance(setup)
    inst.now = start
    for i in order:
        r = reqs[i]
        inst.submit(r.arrival, r.input_len, r.output_len, prefix=r.prefix, priority=r.priority)
    inst.advance()
    res = inst.result()
    back = np.argsort(order)                                          # engine index of request i

    class Permuted:
        first_token, finish = res.first_token[back], res.finish[back]
        preemptions, steps = res.preemptions[back], res.steps
    return engine_mismatches(Permuted, stepper)


@pytest.mark.parametrize("priorities, arrivals, seqs", [
    ([2, 0, 1], [1.0, 2.0, 3.0], 16),          # test_priority_scheduling_basic_ordering
    ([1, 1, 1], [3.0, 1.0, 2.0], 16),          # _arrival_time_tiebreaker
    ([2, 1, 1, 0], [1.0, 3.0, 2.0, 4.0], 16),  # _mixed_priority_and_arrival
    ([1, 1, 1, 1], [4.0, 1.0, 3.0, 2.0], 16),  # _fcfs_fallback
    ([3, 1, 2, 0], [1.0, 2.0, 3.0, 4.0], 2),   # _with_limited_slots
    ([3, 1, 2, 0], [1.0, 2.0, 3.0, 4.0], 1),   # _waiting_queue_order
    ([3, 2, 0], [1.0, 2.0, 3.0], 1),           # _preemption_victim_selection
    ([2, 2, 2], [3.0, 1.0, 2.0], 1),           # _equal_priority_preemption
])
def test_vllm_priority_order_scenarios_on_the_engine(priorities, arrivals, seqs):
    """vLLM test_scheduler.py's priority ordering tests, as ported (test_priority_admission_order,
    test_priority_waiting_order), run to the end on both."""
    s = vllm_stepper(policy="priority", seqs=seqs, budget=1000 if seqs < 16 else 8192, start=max(arrivals))
    for p, a in zip(priorities, arrivals):
        s.add(a, 10, 16, priority=p)
    assert engine_agrees(s, start=max(arrivals)) == []


def test_vllm_priority_heap_property_on_the_engine():
    """vLLM test_scheduler.py::test_priority_scheduling_heap_property, as ported."""
    s = vllm_stepper(policy="priority", seqs=1, start=7.0)
    for i, p in enumerate([5, 1, 8, 3, 2, 7, 4, 6]):
        s.add(float(i), 10, 1, priority=p)
    assert engine_agrees(s, start=7.0) == []


def test_vllm_priority_no_preemption_when_space_available_on_the_engine():
    s = vllm_stepper(policy="priority", seqs=3, budget=200, start=2.0)
    s.add(1.0, 30, 16, priority=5)
    s.add(2.0, 30, 16, priority=5)
    s.step()
    s.add(s.now, 30, 16, priority=0)
    assert engine_agrees(s, start=2.0) == []


def test_vllm_priority_preemption_hands_tokens_back_on_the_engine():
    """vLLM test_scheduler.py::test_priority_scheduling_preemption: the victim lo1 was scheduled
    earlier in the same pass; its token goes back to the budget."""
    s = vllm_stepper(policy="priority", seqs=3, budget=200, vllm_blocks=6, start=1.0)
    s.add(1.0, 32, 16, priority=5)
    s.step()
    s.add(s.now, 32, 16, priority=0)
    (step2,) = [st for st in [s.step()] if st is not None]
    step3 = s.step()
    assert step3.scheduled == {1: 1} and step3.preempted == [0]
    assert engine_agrees(s, start=1.0) == []


def test_vllm_priority_preemption_and_resumption_on_the_engine():
    """vLLM test_scheduler.py::test_priority_scheduling_preemption_and_resumption_when_out_of_kv."""
    s = vllm_stepper(policy="priority", seqs=2, budget=200, vllm_blocks=5)
    s.add(0.0, 30, 16, priority=1)
    s.step()
    s.add(s.now, 32, 2, priority=0)
    assert engine_agrees(s) == []
    assert s.reqs[0].preemptions == 1


# --- bad input ------------------------------------------------------------------------------------

def test_bad_priorities_name_the_field():
    setup = tiny_setup(budget=8, seqs=2, cap=64).replace(kv=Paged(block_size=4, policy="priority"))
    for bad in (1.5, "high", True, None):
        with pytest.raises(ValueError, match="priority must be an int"):
            run_requests(setup, [0.0], [2], [2], priorities=[bad])
    with pytest.raises(ValueError, match="one int per request"):
        run_requests(setup, [0.0, 0.0], [2, 2], [2, 2], priorities=[1])
    with pytest.raises(ValueError, match="policy='priority'"):
        run_requests(setup.replace(kv=Paged(block_size=4)), [0.0], [2], [2], priorities=[1])
    with pytest.raises(ValueError, match="policy='priority'"):
        Instance(tiny_setup()).submit(0.0, 2, 2, priority=3)
    with pytest.raises(ValueError, match="Paged.policy must be one of"):
        Paged(policy="lifo")
    with pytest.raises(ValueError, match="Paged.policy='priority' needs preemption='recompute'"):
        Paged(policy="priority", preemption="swap", swap_gbs=10)


def test_zero_priorities_are_accepted_everywhere():
    """Priority 0 (the default) is what every request has without a priority scheduler."""
    res = run_requests(tiny_setup(), [0.0, 0.0], [2, 2], [2, 2], priorities=[0, 0])
    assert np.isfinite(res.finish).all()


# --- the Workload carries priorities ---------------------------------------------------------------

def test_workload_priorities_reach_the_engine():
    from dataclasses import replace

    from sim import workload
    setup = tiny_setup(budget=8, seqs=1, cap=64).replace(kv=Paged(block_size=4, policy="priority"))
    w = replace(workload.offline(3, 2, 1), priority=(2, 0, 1))
    assert ticks(workload.run(setup, w).finish) == [6, 2, 4]
    assert ticks(workload.run(setup, replace(w, priority=None)).finish) == [2, 4, 6]
    closed = replace(workload.closed_loop(1, 3, 2, 1), priority=[0, 0, 0])
    assert ticks(workload.run(setup, closed).finish) == [2, 4, 6]


def test_bad_workload_priorities_name_the_field():
    from dataclasses import replace

    from sim import workload
    w = workload.offline(3, 2, 1)
    with pytest.raises(ValueError, match=r"Workload.priority must give one int per request \(3\), got 2"):
        replace(w, priority=(1, 2))
    with pytest.raises(ValueError, match="Workload.priority must hold ints"):
        replace(w, priority=(1, 2.5, 0))
    with pytest.raises(ValueError, match="Workload.priority must give one int per request"):
        replace(w, priority=3)
    fcfs = tiny_setup(budget=8, seqs=1, cap=64).replace(kv=Paged(block_size=4))
    with pytest.raises(ValueError, match="policy='priority'"):
        workload.run(fcfs, replace(w, priority=(1, 0, 0)))


def test_a_fleet_refuses_priorities_rather_than_dropping_them():
    from dataclasses import replace

    from sim import workload
    from sim.fleet import Fleet, run_fleet
    setup = tiny_setup(budget=8, seqs=2, cap=64).replace(kv=Paged(block_size=4, policy="priority"))
    w = replace(workload.poisson(10, 3, 2, 2), priority=(1, 0, 0))
    with pytest.raises(ValueError, match="Workload.priority: a fleet does not carry"):
        run_fleet(Fleet.of(setup, 2), w)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(priority_runs(), st.lists(st.floats(0, 0.2), max_size=10))
def test_a_driven_instance_equals_the_whole_run(case, cuts):
    """Submitting each request at its arrival after advancing to it (a fleet's way), with extra
    cuts, gives the whole run bit for bit (the queue takes arrivals at step starts either way)."""
    setup, arrivals, inputs, outputs, priorities = case
    whole = run_requests(setup, arrivals, inputs, outputs, priorities=priorities)
    driven = driven_run(setup, arrivals, inputs, outputs, cuts, priority=priorities)
    assert np.array_equal(driven.first_token, whole.first_token)
    assert np.array_equal(driven.finish, whole.finish)
    assert np.array_equal(driven.steps.start, whole.steps.start)
