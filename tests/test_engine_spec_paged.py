"""The engine's speculative decoding with paged KV against vLLM V1's rule as tests/vllm_reference.py
states it, bit for bit: first-token and finish times, preemptions, and every model step's start,
tokens, context, decoders and draft seconds.

The rule (V1 with a draft model, ``num_lookahead_tokens = k``): a decoder is scheduled 1 + k tokens
(its last token and k drafts) and its KV must hold them plus k lookahead slots; a prompt chunk, at
admission or while running, allocates k lookahead slots beyond it too; drafts are scheduled only
for decoders; each draft is accepted as ``sim.speculative.Speculative`` draws (a generator per
request, kept across preemptions); the rejected drafts' slots are given back to the computed
counter (``num_computed -= rejected``); the step adds ``k x draft_cost x step_time(decoders,
context)``; a waiting request that needs one token while only decoders were scheduled is padded to
1 + k tokens, its placeholder drafts all rejected; the token budget cuts decoders in running order
(n < 1 + k tokens: n - 1 drafts, n - 1 draws at most; none left: the decoder waits a step).
Modelled with FCFS or priority scheduling, recompute preemption, no prefix cache; Setup refuses
the other combinations. Timelines are in ticks of 1/1024 s on tests/conftest.py's instance (a step
of T tokens lasts max(T, 2) ticks when kv = 0).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from sim.engine import Instance, run_requests
from sim.kv import Paged, PrefixCache
from sim.speculative import Speculative
from engine_parity import assert_same, driven_run
from vllm_reference import engine_mismatches, vllm_run, vllm_stepper

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def spec_paged_runs(draw, policy="fcfs"):
    B = draw(st.sampled_from([1, 2, 4, 16]))
    k = draw(st.integers(1, 4))
    seqs = draw(st.integers(1, 6))
    budget = draw(st.one_of(st.integers(1, seqs * (k + 1)),                  # cuts decoders' drafts
                            st.integers(seqs * (k + 1), seqs * (k + 1) + 20)))
    n = draw(st.integers(1, 12))
    inputs = draw(st.lists(st.one_of(st.just(1), st.integers(1, 40)), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    fit = max(i + o for i, o in zip(inputs, outputs)) + 2 * k
    blocks = draw(st.integers(-(-fit // B), -(-fit // B) * 4))      # tight to roomy: preemptions
    watermark = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3]))
    spec = Speculative(k=k, alpha=draw(st.sampled_from([0.0, 0.5, 0.8])),
                       draft_cost=draw(st.sampled_from([0.0, 0.1])), seed=draw(st.integers(0, 3)))
    setup = tiny_setup(kv=draw(st.sampled_from([0, 1])), budget=budget, seqs=seqs, cap=blocks * B).replace(
        kv=Paged(block_size=B, watermark=watermark, policy=policy), speculative=spec)
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.001, 0.01, 0.05]), min_size=n, max_size=n))
    priorities = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n)) if policy == "priority" else None
    return setup, list(np.cumsum(gaps)), inputs, outputs, priorities


@PROFILE
@given(spec_paged_runs())
def test_spec_paged_engine_equals_the_vllm_v1_reference(case):
    check_against_reference(*case)


@PROFILE
@given(spec_paged_runs(policy="priority"))
def test_spec_paged_priority_engine_equals_the_vllm_v1_reference(case):
    """With priority scheduling too: a speculating decoder that is its own victim leaves the ones
    after it idle for the step (their draws move on by a step), victims hand back 1 + k tokens."""
    check_against_reference(*case)


def check_against_reference(setup, arrivals, inputs, outputs, priorities):
    try:
        ref = vllm_run(setup, arrivals, inputs, outputs, priorities=priorities)
    except RuntimeError:                     # a request whose chunk + lookahead never fits
        with pytest.raises(RuntimeError, match="can never be admitted"):
            run_requests(setup, arrivals, inputs, outputs, priorities=priorities)
        return
    assert_same(run_requests(setup, arrivals, inputs, outputs, priorities=priorities), ref, extra_s=True)


# --- hand-worked timelines ----------------------------------------------------------------------

def test_lookahead_block_forces_a_preemption():
    """Blocks of 4, 3 blocks; k = 1, alpha = 0 (every draft rejected: 1 token a step), draft_cost
    0.5 (a draft pass of D decoders adds 0.5 x max(D, 2) ticks); two 3-token prompts, 4 output
    tokens, at 0. t=0: each is admitted with 3 + 1 lookahead slots (1 block each): 6 tokens,
    until 6. t=6: r0 decodes 1 + 1 tokens and must hold 4 + 1 + 1 = 6 slots: a 2nd block (the
    last); r1 needs one too: FCFS preempts the tail, r1 itself (without speculation both decode
    in their first block at 6: 4 slots). 2 tokens + 1 draft tick, until 9. t=9, 12: r0 alone
    (5 + 2 = 7, then 8 slots: its 2 blocks); r1 (4 tokens after its recompute) fits as a whole
    (1 block) but not with its lookahead (4 + 1 slots: 2 blocks, 1 free), so it waits. r0
    finishes at 15; r1 recomputes 4 tokens 15-19 (its 2nd token), decodes 19-22, 22-25."""
    spec = Speculative(k=1, alpha=0.0, draft_cost=0.5)
    setup = tiny_setup(budget=8, seqs=2, cap=12).replace(kv=Paged(block_size=4), speculative=spec)
    res = run_requests(setup, [0.0, 0.0], [3, 3], [4, 4])
    assert ticks(res.first_token) == [6, 6] and ticks(res.finish) == [15, 25]
    assert res.preemptions.tolist() == [0, 1]
    assert ticks(res.steps.start) == [0, 6, 9, 12, 15, 19, 22]
    assert res.steps.tokens.tolist() == [6, 2, 2, 2, 4, 2, 2]
    assert ticks(res.steps.extra_s) == [0, 1, 1, 1, 0, 1, 1]
    assert res.steps.decoders.tolist()[:2] == [0, 1]
    plain = run_requests(setup.replace(speculative=None), [0.0, 0.0], [3, 3], [4, 4])
    assert plain.steps.decoders.tolist()[:2] == [0, 2]


def test_one_token_prompt_beside_decoders_is_padded():
    """k = 2, alpha = 0, draft_cost 0.5, blocks of 4 (roomy). r0 (3-token prompt, 3 outputs) at 0,
    r1 (1-token prompt, 2 outputs) at 1 tick. t=0: r0 prefills 3, until 3. t=3: r0 decodes 1 + 2;
    only decoders were scheduled, so r1's single prompt token is padded to 1 + 2 (V1's
    pad_spec_decode): 6 tokens + 2 x 0.5 x 2 draft ticks, until 11; r1 emits 1 token (its
    placeholders are rejected) and r0 its 2nd. t=11: both decode 3 tokens: 6 + 2, until 19."""
    spec = Speculative(k=2, alpha=0.0, draft_cost=0.5)
    setup = tiny_setup(budget=8, seqs=2, cap=64).replace(kv=Paged(block_size=4), speculative=spec)
    res = run_requests(setup, [0.0, TICK], [3, 1], [3, 2])
    assert res.steps.tokens.tolist() == [3, 6, 6]
    assert ticks(res.steps.start) == [0, 3, 11]
    assert res.steps.decoders.tolist() == [0, 1, 2]
    assert ticks(res.first_token) == [3, 11] and ticks(res.finish) == [19, 19]


def test_budget_cuts_the_last_decoders_drafts():
    """Budget 5, k = 2, alpha = 0.999 (drafts accepted), draft_cost 0; two 1-token prompts of 5
    outputs at 0. t=0: both prefill (2 ticks). t=2: r0 asks 1 + 2 tokens, leaving 2 of the budget:
    r1 gets 2, one draft (V1's cut), so it emits 2 and r0 3: 5 tokens, until 7. t=7: r0 needs 1
    more token and is still scheduled 3; r1 2 again: both finish at 12."""
    spec = Speculative(k=2, alpha=0.999, draft_cost=0.0)
    setup = tiny_setup(budget=5, seqs=2, cap=64).replace(kv=Paged(block_size=16), speculative=spec)
    args = ([0.0, 0.0], [1, 1], [5, 5])
    res = run_requests(setup, *args)
    assert res.steps.tokens.tolist() == [2, 5, 5] and ticks(res.finish) == [12, 12]
    assert engine_mismatches(res, vllm_run(setup, *args)) == []


def test_no_budget_left_for_a_decoder_makes_it_wait_a_step():
    """Budget 3, k = 2, alpha = 0: r0 takes all 3 tokens each step, so r1 (admitted beside it) is
    not reached: V1's running pass ends with the budget; r1 decodes only once r0 finishes."""
    spec = Speculative(k=2, alpha=0.0, draft_cost=0.0)
    setup = tiny_setup(budget=3, seqs=2, cap=64).replace(kv=Paged(block_size=16), speculative=spec)
    args = ([0.0, 0.0], [1, 1], [3, 2])
    res = run_requests(setup, *args)
    ref = vllm_run(setup, *args)
    assert engine_mismatches(res, ref) == []
    assert [st.scheduled for st in ref.steps] == [{0: 1, 1: 1}, {0: 3}, {0: 3}, {1: 3}]
    assert res.steps.tokens.tolist() == [2, 3, 3, 3]


def test_preempted_request_continues_its_own_draws():
    """A recomputed request's acceptance draws continue its generator: the engine and the
    reference (one generator per request, kept across preemptions) agree on a run that preempts
    speculating decoders."""
    spec = Speculative(k=3, alpha=0.6, seed=1)
    setup = tiny_setup(budget=16, seqs=3, cap=40).replace(kv=Paged(block_size=4), speculative=spec)
    args = ([0.0, 0.0, 0.0], [6, 6, 6], [12, 12, 12])
    res = run_requests(setup, *args)
    assert res.preemptions.sum() > 0
    assert engine_mismatches(res, vllm_run(setup, *args)) == []


# --- vLLM's speculative tests (tests/test_vllm_scheduler_parity.py), on the engine too ----------

def engine_agrees(stepper):
    """Run the stepper's requests to the end on the reference and on the engine; where they differ."""
    stepper.run()
    inst = Instance(stepper.setup.replace(speculative=stepper.spec))
    for r in stepper.reqs:
        inst.submit(r.arrival, r.input_len, r.output_len)
    inst.advance()
    return engine_mismatches(inst.result(), stepper)


def test_vllm_spec_tokens_scheduled_after_prefill_on_the_engine():
    """vLLM test_scheduler.py::test_schedule_spec_decoding_stats, as ported."""
    s = vllm_stepper(speculative=Speculative(k=3))
    s.add(0.0, 1, 16)
    s.add(0.0, 1, 16)
    assert engine_agrees(s) == []


def test_vllm_no_spec_tokens_for_prefill_chunks_on_the_engine():
    """vLLM test_scheduler.py::test_no_spec_tokens_scheduled_for_prefill_chunks (budget 50), as ported."""
    s = vllm_stepper(speculative=Speculative(k=3), budget=50)
    s.add(0.0, 80, 16)
    assert engine_agrees(s) == []
    assert [st.tokens for st in s.steps[:3]] == [50, 30, 4]


def test_vllm_spec_output_capped_at_max_tokens_on_the_engine():
    """vLLM test_scheduler.py::test_stop_via_update_from_output, its max-tokens case, as ported."""
    s = vllm_stepper(speculative=Speculative(k=2, alpha=0.999, seed=0))
    s.add(0.0, 10, 3)
    assert engine_agrees(s) == []


# --- bad input: the combinations not modelled are refused, naming the fields ---------------------

@pytest.mark.parametrize("kv, extra, message", [
    (Paged(block_size=4, preemption="swap", swap_gbs=10), {}, "Paged.preemption='recompute'"),
    (Paged(block_size=4), {"prefix_cache": PrefixCache()}, "Setup.prefix_cache is not modelled"),
])
def test_unmodelled_combinations_are_refused(kv, extra, message):
    base = tiny_setup(budget=10, seqs=2, cap=64)
    with pytest.raises(ValueError, match=message):
        base.replace(kv=kv, speculative=Speculative(k=4), **extra)


def test_prefilled_requests_are_refused():
    setup = tiny_setup(budget=10, seqs=2, cap=64).replace(kv=Paged(block_size=4), speculative=Speculative(k=4))
    with pytest.raises(ValueError, match="prefilled requests"):
        Instance(setup).submit(0.0, 4, 4, prefilled=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_paged_runs(policy="priority"), st.lists(st.floats(0, 0.2), max_size=10))
def test_a_driven_instance_equals_the_whole_run(case, cuts):
    """Submitting each request at its arrival after advancing to it, with extra cuts, gives the
    whole run bit for bit."""
    setup, arrivals, inputs, outputs, priorities = case
    try:
        whole = run_requests(setup, arrivals, inputs, outputs, priorities=priorities)
    except RuntimeError:
        return
    driven = driven_run(setup, arrivals, inputs, outputs, cuts, priority=priorities)
    assert np.array_equal(driven.first_token, whole.first_token)
    assert np.array_equal(driven.finish, whole.finish)
    assert np.array_equal(driven.steps.start, whole.steps.start)


def test_a_request_whose_drafts_and_lookahead_never_fit_is_refused_up_front():
    """Alone, a decoder's last step holds input + output - 1 tokens plus k drafts and k lookahead
    slots; one that cannot would preempt itself forever, so the run is refused before it starts."""
    from sim import workload
    setup = tiny_setup(budget=10, seqs=2, cap=16).replace(kv=Paged(block_size=4), speculative=Speculative(k=2))
    w = workload.offline(1, 10, 4)                     # 10 + 4 - 1 + 4 = 17 > 16
    with pytest.raises(ValueError, match=r"input_len \+ output_len - 1 \+ 2k = 17 tokens"):
        workload.run(setup, w)
    assert np.isfinite(workload.run(setup, workload.offline(1, 10, 3)).finish).all()   # 16: fits
