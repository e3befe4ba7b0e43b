"""vLLM V1's scheduler tests, ported onto the plain vLLM reference (tests/vllm_reference.py).

Each test names the vLLM test it comes from (``tests/v1/core/test_scheduler.py`` at vLLM commit
003df2961dd8830c317a61f9745ccd557da9fa06) and sets up the same situation: block size, number of
blocks (vLLM's count, which includes its null block), token budget, max_num_seqs, prompt lengths,
max_tokens. Where vLLM's test drives ``schedule`` / ``update_from_output`` by hand, the port runs
the same steps and asserts which tokens each step schedules for each request, who is preempted,
and what waits. Timelines are worked by hand in the comments (a step of T tokens lasts
max(T, 2) ticks). tests/VLLM_PARITY.md lists the tests not ported and why. The last tests are
hand-worked timelines of the three rules the issue found missing from the engine.
"""

import pytest

from conftest import TICK
from sim.speculative import Speculative
from vllm_reference import vllm_stepper


def run_steps(s, n):
    """The next ``n`` model steps' {request: tokens}."""
    out = []
    while len(out) < n:
        step = s.step()
        if step is not None:
            out.append(step)
    return out


# --- FCFS, budget, chunked prefill, max_num_seqs --------------------------------------------------

@pytest.mark.parametrize("caching", [False, True])
def test_schedule(caching):
    """vLLM test_scheduler.py::test_schedule: 10 requests of 10 tokens all start in step 1, whole,
    in arrival order."""
    s = vllm_stepper(caching=caching)
    for _ in range(10):
        s.add(0.0, 10, 16)
    step = s.step()
    assert list(step.scheduled.items()) == [(i, 10) for i in range(10)]
    assert step.admitted == list(range(10))
    assert s.waiting_ids() == [] and s.running_ids() == list(range(10))


@pytest.mark.parametrize("caching", [False, True])
def test_schedule_concurrent_partial_requests(caching):
    """vLLM test_scheduler.py::test_schedule_concurrent_partial_requests: budget 1024,
    long_prefill_token_threshold 400, three 800-token prompts: 400 + 400 + 224, again, then the
    first two decode (1 each) and the third takes its remaining 800 - 224 - 224."""
    s = vllm_stepper(budget=1024, threshold=400, caching=caching)
    for _ in range(3):
        s.add(0.0, 800, 16)
    steps = run_steps(s, 3)
    assert [st.scheduled for st in steps] == [
        {0: 400, 1: 400, 2: 224},
        {0: 400, 1: 400, 2: 224},
        {0: 1, 1: 1, 2: 352},
    ]


def test_schedule_order():
    """vLLM test_scheduler.py::test_schedule_order (chunked prefill on): budget 1024, 3 seqs, two
    800-token prompts then two of 10: the first two are scheduled (800 + 224), the short ones
    wait although a slot is free, because the budget is spent."""
    s = vllm_stepper(budget=1024, seqs=3)
    for n in (800, 800, 10, 10):
        s.add(0.0, n, 16)
    step = s.step()
    assert step.scheduled == {0: 800, 1: 224}
    assert s.waiting_ids() == [2, 3]


def test_budget_fills_then_next_step():
    """vLLM test_scheduler.py::test_throttle_capacity_bound_guard_admits, its first step (the
    throttle is not modelled): budget 200, two 200-token prompts: a takes the whole budget, b
    waits; next step a decodes one token and b takes the other 199."""
    s = vllm_stepper(budget=200)
    s.add(0.0, 200, 4)
    s.add(0.0, 200, 4)
    steps = run_steps(s, 2)
    assert [st.scheduled for st in steps] == [{0: 200}, {0: 1, 1: 199}]


def test_max_num_seqs_and_budget_together():
    """vLLM test_scheduler.py::test_scheduler_stats_waiting_queues, without its skipped-waiting
    part: budget 100, three 50-token prompts: two run, one waits."""
    s = vllm_stepper(budget=100)
    for _ in range(3):
        s.add(0.0, 50, 16)
    step = s.step()
    assert step.scheduled == {0: 50, 1: 50}
    assert s.running_ids() == [0, 1] and s.waiting_ids() == [2]


# --- preemption -------------------------------------------------------------------------------------

def test_preempt_when_kv_is_full():
    """vLLM test_scheduler.py::test_preempt_during_execution, synchronous: 11 blocks (10 usable) of
    16, budget 100, two 80-token prompts, 16 output tokens each.

    step 1: r0 80 tokens (5 blocks); r1 its first 20 (whole prompt 5 blocks fits, 2 taken).
    step 2: r0 decodes (block 6: 81 tokens); r1 wants 60 more (3 blocks), 2 are free: the last
            running request is r1 itself, so it is preempted (as in vLLM: running == [r0]).
    steps 3-16: r0 decodes; r1's whole prompt (5 blocks) never fits the 4 free ones.
    step 17: r0 finished at 100 + 15 x 2 = 130 ticks; r1 prefills its 80 tokens again."""
    s = vllm_stepper(block_size=16, vllm_blocks=11, budget=100)
    s.add(0.0, 80, 16)
    s.add(0.0, 80, 16)
    steps = run_steps(s, 17)
    assert steps[0].scheduled == {0: 80, 1: 20}
    assert steps[1].scheduled == {0: 1} and steps[1].preempted == [1]
    assert [st.scheduled for st in steps[2:16]] == [{0: 1}] * 14
    assert steps[16].scheduled == {1: 80}
    r0, r1 = s.reqs
    assert r0.finish == 130 * TICK and r1.preemptions == 1
    s.run()
    assert r1.first_token == 210 * TICK and r1.finish == 240 * TICK


def test_unable_to_allocate_waits_for_free():
    """vLLM test_scheduler.py::test_kv_connector_unable_to_allocate, without the connector: blocks
    of 4, 10 blocks (9 usable), two 24-token prompts (6 blocks each), 2 output tokens. Only one
    runs; when it finishes all 9 blocks are free and the other runs."""
    s = vllm_stepper(block_size=4, vllm_blocks=10, caching=True)
    s.add(0.0, 24, 2)
    s.add(0.0, 24, 2)
    steps = run_steps(s, 2)
    assert [st.scheduled for st in steps] == [{0: 24}, {0: 1}]
    assert s.running_ids() == [] and s.waiting_ids() == [1] and s.pool.num_free() == 9
    steps = run_steps(s, 2)
    assert [st.scheduled for st in steps] == [{1: 24}, {1: 1}]
    assert s.pool.num_free() == 9 and s.done()


def test_preemption_and_readmission_with_own_blocks_cached():
    """vLLM test_scheduler.py::test_kv_connector_handles_preemption, without the connector: blocks
    of 2, 7 blocks (6 usable), two 5-token prompts, 4 output tokens, prefix caching on.

    step 1: both prefill 5 tokens (3 blocks each, free 0).
    step 2: both decode (6 tokens fit 3 blocks).
    step 3: r0 needs a 4th block: r1 (last) is preempted, its blocks go to the free queue tail
            first-last and r0's new block comes from the head: r1's third block, evicted.
    step 4: r0 decodes and finishes; r1 (7 tokens) would hit its own first 2 blocks but needs
            4 - 2 + 2 = 4 blocks with 2 free: refused.
    step 5: r1 hits its 2 surviving blocks (4 tokens) and computes the other 3.
    step 6: r1 decodes its last token."""
    s = vllm_stepper(block_size=2, vllm_blocks=7, caching=True)
    s.add(0.0, 5, 4)
    s.add(0.0, 5, 4)
    steps = run_steps(s, 6)
    assert [st.scheduled for st in steps] == [{0: 5, 1: 5}, {0: 1, 1: 1}, {0: 1}, {0: 1}, {1: 3}, {1: 1}]
    assert steps[2].preempted == [1]
    assert steps[4].hits == {1: 4}
    assert s.pool.evicted[0] == (5, ("private", 1, 2))
    assert s.done() and s.pool.num_free() == 6


def test_memory_leak():
    """vLLM test_scheduler.py::test_memory_leak: 5 requests of 10 tokens and 10 output tokens,
    prefix caching on, one added per step; at the end every block is free and unreferenced."""
    s = vllm_stepper(caching=True)
    for _ in range(5):
        s.add(s.now, 10, 10)
        s.step()
    s.run()
    assert s.pool.num_free() == s.pool.num_blocks
    assert all(ref == 0 for ref in s.pool.ref)


# --- priority scheduling ---------------------------------------------------------------------------

def priority_order(priorities, arrivals, seqs=16, budget=8192):
    s = vllm_stepper(policy="priority", seqs=seqs, budget=budget, start=max(arrivals))
    for p, a in zip(priorities, arrivals):
        s.add(a, 10, 16, priority=p)
    return s, s.step()


@pytest.mark.parametrize("vllm_test, priorities, arrivals, expected", [
    ("test_priority_scheduling_basic_ordering", [2, 0, 1], [1.0, 2.0, 3.0], [1, 2, 0]),
    ("test_priority_scheduling_arrival_time_tiebreaker", [1, 1, 1], [3.0, 1.0, 2.0], [1, 2, 0]),
    ("test_priority_scheduling_mixed_priority_and_arrival", [2, 1, 1, 0], [1.0, 3.0, 2.0, 4.0],
     [3, 2, 1, 0]),
    ("test_priority_scheduling_fcfs_fallback", [1, 1, 1, 1], [4.0, 1.0, 3.0, 2.0], [1, 3, 2, 0]),
])
def test_priority_admission_order(vllm_test, priorities, arrivals, expected):
    """vLLM test_scheduler.py::<vllm_test>: all fit; admitted by (priority, arrival)."""
    _, step = priority_order(priorities, arrivals)
    assert step.admitted == expected


@pytest.mark.parametrize("vllm_test, seqs, priorities, arrivals, admitted, waiting", [
    ("test_priority_scheduling_with_limited_slots", 2, [3, 1, 2, 0], [1.0, 2.0, 3.0, 4.0],
     [3, 1], [2, 0]),
    ("test_priority_scheduling_waiting_queue_order", 1, [3, 1, 2, 0], [1.0, 2.0, 3.0, 4.0],
     [3], [1, 2, 0]),
    ("test_priority_scheduling_preemption_victim_selection", 1, [3, 2, 0], [1.0, 2.0, 3.0],
     [2], [1, 0]),
    ("test_priority_scheduling_equal_priority_preemption", 1, [2, 2, 2], [3.0, 1.0, 2.0],
     [1], [2, 0]),
])
def test_priority_waiting_order(vllm_test, seqs, priorities, arrivals, admitted, waiting):
    """vLLM test_scheduler.py::<vllm_test>: max_num_seqs admits the first; the rest wait in
    (priority, arrival) order."""
    s, step = priority_order(priorities, arrivals, seqs=seqs, budget=1000)
    assert step.admitted == admitted
    assert s.waiting_ids() == waiting


def test_priority_scheduling_heap_property():
    """vLLM test_scheduler.py::test_priority_scheduling_heap_property: one slot, requests done
    after one step (vLLM finishes them by hand; here max_tokens = 1): admitted by priority."""
    priorities = [5, 1, 8, 3, 2, 7, 4, 6]
    s = vllm_stepper(policy="priority", seqs=1, start=7.0)
    for i, p in enumerate(priorities):
        s.add(float(i), 10, 1, priority=p)
    steps = run_steps(s, len(priorities))
    assert [priorities[st.admitted[0]] for st in steps] == sorted(priorities)


def test_priority_scheduling_no_preemption_when_space_available():
    """vLLM test_scheduler.py::test_priority_scheduling_no_preemption_when_space_available: two
    low-priority requests run; a high-priority one arrives and is simply admitted."""
    s = vllm_stepper(policy="priority", seqs=3, budget=200, start=2.0)
    s.add(1.0, 30, 16, priority=5)
    s.add(2.0, 30, 16, priority=5)
    s.step()
    s.add(s.now, 30, 16, priority=0)
    step = s.step()
    assert step.scheduled == {0: 1, 1: 1, 2: 30} and step.preempted == []
    assert s.running_ids() == [0, 1, 2] and s.waiting_ids() == []


def test_priority_scheduling_preemption():
    """vLLM test_scheduler.py::test_priority_scheduling_preemption: 6 blocks (5 usable) of 16,
    budget 200. lo1 (priority 5, 32 tokens, 2 blocks) runs; hi1 (priority 0, 32 tokens) arrives:
    lo1 takes its 3rd block and hi1 its 2 (0 free). Next step lo1 is scheduled first, then hi1
    needs a 3rd block: the victim is max(priority, arrival) = lo1, whose token is handed back."""
    s = vllm_stepper(policy="priority", seqs=3, budget=200, vllm_blocks=6, start=1.0)
    s.add(1.0, 32, 16, priority=5)
    run_steps(s, 1)
    s.add(s.now, 32, 16, priority=0)
    (step2,) = run_steps(s, 1)
    assert step2.scheduled == {0: 1, 1: 32} and s.pool.num_free() == 0
    (step3,) = run_steps(s, 1)
    assert step3.scheduled == {1: 1} and step3.preempted == [0]
    assert s.running_ids() == [1] and s.waiting_ids() == [0]


def test_priority_scheduling_preemption_and_resumption_when_out_of_kv():
    """vLLM test_scheduler.py::test_priority_scheduling_preemption_and_resumption_when_out_of_kv:
    5 blocks (4 usable) of 16, 2 seqs, budget 200. low (priority 1, 30 tokens) runs; high
    (priority 0, 32 tokens) is admitted (KV full); next step high needs a 3rd block and low is
    preempted; high finishes (vLLM aborts it; here its 2nd token is its last) and low resumes
    with its 30 prompt tokens plus its 2 decoded ones."""
    s = vllm_stepper(policy="priority", seqs=2, budget=200, vllm_blocks=5)
    s.add(0.0, 30, 16, priority=1)
    run_steps(s, 1)
    s.add(s.now, 32, 2, priority=0)
    (step2,) = run_steps(s, 1)
    assert step2.scheduled == {0: 1, 1: 32} and s.pool.num_free() == 0
    step3, step4 = run_steps(s, 2)
    assert step3.scheduled == {1: 1} and step3.preempted == [0]
    assert step4.scheduled == {0: 32} and step4.admitted == [0]
    assert s.reqs[1].finish is not None and s.reqs[0].preemptions == 1


# --- speculative decoding ---------------------------------------------------------------------------

def test_spec_tokens_scheduled_after_prefill():
    """vLLM test_scheduler.py::test_schedule_spec_decoding_stats: one-token prompts are scheduled
    1 token (no drafts for a prefill), then 1 + k each (here k = 3 for every request: the
    simulator's draft proposes k tokens, vLLM's ngram drafter proposes a varying number)."""
    s = vllm_stepper(speculative=Speculative(k=3))
    s.add(0.0, 1, 16)
    s.add(0.0, 1, 16)
    steps = run_steps(s, 2)
    assert [st.scheduled for st in steps] == [{0: 1, 1: 1}, {0: 4, 1: 4}]


def test_no_spec_tokens_scheduled_for_prefill_chunks():
    """vLLM test_scheduler.py::test_no_spec_tokens_scheduled_for_prefill_chunks: k = 3, budget 50,
    an 80-token prompt: 50, then the remaining 30 (no drafts with a prompt chunk), then 1 + 3."""
    s = vllm_stepper(speculative=Speculative(k=3), budget=50)
    s.add(0.0, 80, 16)
    steps = run_steps(s, 3)
    assert [st.scheduled for st in steps] == [{0: 50}, {0: 30}, {0: 4}]


def test_spec_decode_padding_first_decode_step():
    """vLLM test_scheduler.py::test_spec_decode_padding_first_decode_step: k = 3, caching, blocks
    of 16, two identical 33-token prompts. r1 prefills 33 (2 full blocks cached); r2 hits 32
    tokens, needs 1, and is padded to 1 + 3 beside r1's speculative decode; its placeholder drafts
    are all rejected (it emits 1 token)."""
    s = vllm_stepper(speculative=Speculative(k=3), caching=True)
    prompt = ((7, 33),)
    s.add(0.0, 33, 16, prefix=prompt)
    (step1,) = run_steps(s, 1)
    s.add(s.now, 33, 16, prefix=prompt)
    (step2,) = run_steps(s, 1)
    assert step1.scheduled == {0: 33}
    assert step2.scheduled == {0: 4, 1: 4} and step2.hits == {1: 32}
    assert step2.emitted[1] == 1 and s.reqs[1].num_computed == 33


def test_spec_decode_padding_skipped_with_prefill_in_batch():
    """vLLM test_scheduler.py::test_spec_decode_padding_skipped_with_prefill_in_batch: k = 3,
    budget 64. r_warm (33 tokens, 1 output) caches the prompt; r_long (100 tokens) prefills 64;
    r_candidate (same 33 tokens) hits 32 beside r_long's second chunk: not padded, 1 token."""
    s = vllm_stepper(speculative=Speculative(k=3), caching=True, budget=64)
    prompt = ((7, 33),)
    s.add(0.0, 33, 1, prefix=prompt)
    run_steps(s, 1)
    assert s.reqs[0].finish is not None
    s.add(s.now, 100, 16)
    (step2,) = run_steps(s, 1)
    s.add(s.now, 33, 1, prefix=prompt)
    (step3,) = run_steps(s, 1)
    assert step2.scheduled == {1: 64}
    assert step3.scheduled == {1: 36, 2: 1} and step3.hits == {2: 32}


def test_spec_output_capped_at_max_tokens():
    """vLLM test_scheduler.py::test_stop_via_update_from_output, its max-tokens case: a request
    with 2 tokens to go that accepts more drafts emits only 2 and finishes. k = 2, alpha close to
    1: the draws (Speculative.rng(0)) accept both drafts in the first decode step."""
    spec = Speculative(k=2, alpha=0.999, seed=0)
    rng = spec.rng(0)
    assert rng.random() < spec.alpha and rng.random() < spec.alpha      # both drafts accepted
    s = vllm_stepper(speculative=spec)
    s.add(0.0, 10, 3)
    step1, step2 = run_steps(s, 2)
    assert step1.emitted == {0: 1} and step2.scheduled == {0: 3} and step2.emitted == {0: 2}
    assert s.reqs[0].finish == step2.start + step2.duration and s.done()


# --- the three rules the engine lacked (hand-worked, not from vLLM's tests) -----------------------

def test_per_chunk_allocation_with_whole_prompt_check():
    """Blocks of 4, 10 blocks (11 with vLLM's null block), budget 4. A 16-token prompt holds 1, 2,
    3, 4 blocks after its four chunks (9, 8, 7, 6 free), not 4 from the start. A 44-token prompt
    (11 blocks) is refused although its first chunk would fit: its whole sequence does not."""
    s = vllm_stepper(block_size=4, vllm_blocks=11, budget=4)
    s.add(0.0, 16, 2)
    held, free = [], []
    for _ in range(4):
        s.step()
        held.append(len(s.reqs[0].blocks))
        free.append(s.pool.num_free())
    assert held == [1, 2, 3, 4] and free == [9, 8, 7, 6]
    big = vllm_stepper(block_size=4, vllm_blocks=11, budget=4)
    big.add(0.0, 44, 2)
    with pytest.raises(RuntimeError, match="can never be admitted"):
        big.step()


def test_watermark_only_while_others_run():
    """Blocks of 4, 10 usable, watermark 0.5 (5 blocks kept free). Alone, a 40-token prompt that
    fills all 10 blocks is admitted (nothing runs: no watermark). With r0 (4 tokens, 3 outputs)
    running, r1 (20 tokens, 5 blocks) needs 5 + 5 free and waits; running requests' own blocks
    ignore the watermark; r1 starts the step after r0 finishes (3 steps: prefill + 2 decodes)."""
    alone = vllm_stepper(block_size=4, vllm_blocks=11, watermark=0.5)
    alone.add(0.0, 40, 1)
    assert alone.step().scheduled == {0: 40}
    s = vllm_stepper(block_size=4, vllm_blocks=11, watermark=0.5)
    s.add(0.0, 4, 3)
    s.add(0.0, 20, 1)
    steps = run_steps(s, 4)
    assert [st.scheduled for st in steps] == [{0: 4}, {0: 1}, {0: 1}, {1: 20}]
    assert s.watermark_blocks == 5


def test_prefix_shared_with_running_requests():
    """Blocks of 16, prefix caching, one shared 64-token prompt (key 1), budget 32. r0 prefills in
    two chunks; blocks are cached as they are scheduled, so r1, arriving while r0 runs, hits 3
    blocks (48 tokens; at most 63 can hit) in step 3 and computes 16. In the same step as the
    holder schedules them: r2 and r3 arrive together with a 33-token shared prompt (key 2) and
    budget to spare: r3 hits the 2 blocks r2 is computing in that very step."""
    s = vllm_stepper(caching=True, budget=32)
    s.add(0.0, 64, 4, prefix=((1, 64),))
    s.add(0.0, 64, 4, prefix=((1, 64),))
    steps = run_steps(s, 3)
    assert [st.scheduled for st in steps] == [{0: 32}, {0: 32}, {0: 1, 1: 16}]
    assert steps[2].hits == {1: 48} and s.reqs[1].cached_tokens == 48
    t = vllm_stepper(caching=True)
    t.add(0.0, 33, 4, prefix=((2, 33),))
    t.add(0.0, 33, 4, prefix=((2, 33),))
    step = t.step()
    assert step.scheduled == {0: 33, 1: 1} and step.hits == {0: 0, 1: 32}


def test_priority_preemption_resumes_from_own_cached_blocks():
    """vLLM test_scheduler.py::test_priority_scheduling_ec_connector_preemption_and_resumption,
    its KV part ("this test only preempts the last block"): blocks of 16, 15 blocks (14 usable),
    prefix caching, 2 seqs. low (priority 1, 94 tokens, 6 blocks) runs; high (priority 0, 128
    tokens, 2 outputs) takes the other 8 (0 free). Next step high needs a 9th block: low is
    preempted, its 6 named blocks go to the free queue's tail and high takes the first of them,
    low's last block. high finishes; low (94 + 2 tokens) resumes from its 5 surviving blocks:
    80 tokens hit, 16 computed."""
    s = vllm_stepper(policy="priority", seqs=2, vllm_blocks=15, caching=True)
    s.add(0.0, 94, 16, priority=1)
    run_steps(s, 1)
    s.add(s.now, 128, 2, priority=0)
    (step2,) = run_steps(s, 1)
    assert step2.scheduled == {0: 1, 1: 128} and s.pool.num_free() == 0
    low_blocks = list(s.reqs[0].blocks)
    (step3,) = run_steps(s, 1)
    assert step3.scheduled == {1: 1} and step3.preempted == [0]
    assert step3.held[1][-1] == low_blocks[-1]
    assert s.reqs[0].num_tokens == 96 and s.reqs[1].finish is not None
    (step4,) = run_steps(s, 1)
    assert step4.scheduled == {0: 16} and step4.hits == {0: 80}
    assert step4.held[0][:5] == low_blocks[:5]


def test_preemption_timeline_times_and_context():
    """The timeline of test_preemption_and_readmission_with_own_blocks_cached with the KV read in
    the step time (a step lasts max(tokens, 2 + context) ticks), worked by hand. Context counts
    every running request's computed tokens, + 1 for a decoder:

    step 1: r0, r1 prefill 5 + 5 over context 0        -> 10 ticks, ends 10 (both first tokens)
    step 2: both decode over (5 + 1) + (5 + 1) = 12     -> 14 ticks, ends 24
    step 3: r1 preempted; r0 decodes over 6 + 1 = 7     ->  9 ticks, ends 33
    step 4: r0 decodes over 8 (r1 refused)              -> 10 ticks, ends 43 (r0 finishes)
    step 5: r1 readmitted with 4 tokens hit, prefills 3 over 4 ->  6 ticks, ends 49
    step 6: r1 decodes over 7 + 1 = 8                   -> 10 ticks, ends 59 (r1 finishes)"""
    s = vllm_stepper(block_size=2, vllm_blocks=7, caching=True, kv_bytes=1)
    s.add(0.0, 5, 4)
    s.add(0.0, 5, 4)
    s.run()
    assert [round(st.start / TICK) for st in s.steps] == [0, 10, 24, 33, 43, 49]
    assert [st.context for st in s.steps] == [0, 12, 7, 8, 4, 8]
    assert [st.decoders for st in s.steps] == [0, 2, 1, 1, 0, 1]
    r0, r1 = s.reqs
    assert (r0.first_token, r0.finish) == (10 * TICK, 43 * TICK)
    assert (r1.first_token, r1.finish) == (10 * TICK, 59 * TICK)


def test_spec_lookahead_slots():
    """Speculative decoding with paged KV, hand-worked: blocks of 4, k = 2, alpha = 0 (every draft
    rejected), prefix caching on, a 4-token prompt and 4 output tokens. Every allocation leaves room for
    computed + tokens + k slots:

    step 1: prefill 4, slots 4 + 2 -> 2 blocks (the second for lookahead only)
    step 2: decode 1 + 2 tokens from 4 computed, slots 4 + 3 + 2 = 9 -> 3 blocks; both drafts
            rejected: computed 7 - 2 = 5
    steps 3, 4: 3 tokens each, slots 10 and 11 -> still 3 blocks; the request finishes.
    Freed, its two unnamed blocks (tokens 4-11 were never a full known block) go to the free
    queue's head, last first; its one named block to the tail."""
    s = vllm_stepper(block_size=4, vllm_blocks=11, speculative=Speculative(k=2, alpha=0.0), caching=True)
    s.add(0.0, 4, 4)
    s.run()
    assert [st.scheduled for st in s.steps] == [{0: 4}, {0: 3}, {0: 3}, {0: 3}]
    assert [len(st.held[0]) for st in s.steps] == [2, 3, 3, 3]
    assert [st.emitted for st in s.steps] == [{0: 1}] * 4
    b0, b1, b2 = s.steps[-1].held[0]
    queue = list(s.pool.free_queue)
    assert queue[:2] == [b2, b1] and queue[-1] == b0


def test_priority_victim_not_yet_scheduled():
    """Priority preemption of a request later in ``running`` than the one that needs a block,
    hand-worked: 6 blocks of 16 (5 usable), hi (priority 0, 32 tokens) and lo (priority 5, 48
    tokens) both start in step 1 (0 blocks free). In step 2 hi's decode needs a 3rd block: lo,
    not scheduled yet, is the victim; nothing to hand back; lo waits."""
    s = vllm_stepper(policy="priority", vllm_blocks=6, budget=200)
    s.add(0.0, 32, 4, priority=0)
    s.add(0.0, 48, 4, priority=5)
    step1, step2 = run_steps(s, 2)
    assert step1.scheduled == {0: 32, 1: 48}
    assert step2.scheduled == {0: 1} and step2.preempted == [1] and s.waiting_ids() == [1]
