"""Paged KV with preemption (sim/kv/paged.py): the fast engine against the plain reference
(tests/kv_reference.py) bit for bit, a hand-worked preemption timeline, the trade-off against the
reservation rule, and bad input."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from engine_parity import driven_run
from kv_reference import plain_kv_run
from vllm_reference import vllm_run
from sim import Setup, lengths, run, summarize, workload
from sim.engine import run_requests
from sim.kv import Paged

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def drive(setup, arrivals, inputs, outputs, prefixes=None, prefilled=None):
    """Submit each request at its arrival after advancing to it (the fleet's way of driving)."""
    return driven_run(setup, arrivals, inputs, outputs, prefix=prefixes or None, prefilled=prefilled or None)


def assert_same_as_reference(setup, arrivals, inputs, outputs, prefixes=None, prefilled=None):
    res = drive(setup, arrivals, inputs, outputs, prefixes, prefilled)
    reqs, steps, _ = plain_kv_run(setup, arrivals, inputs, outputs, prefixes, prefilled)
    assert np.array_equal(res.finish, [r.finish for r in reqs])
    assert np.array_equal(res.first_token, [np.nan if r.first_token is None else r.first_token for r in reqs],
                          equal_nan=True)
    log = res.steps
    assert np.array_equal(log.start, [s[0] for s in steps])
    assert log.tokens.tolist() == [s[1] for s in steps]
    assert log.context.tolist() == [s[2] for s in steps]
    assert log.flags.tolist() == [s[5] for s in steps]
    if setup.kv is not None:
        assert res.preemptions.tolist() == [r.preemptions for r in reqs]
        assert res.cached_tokens.tolist() == [r.cached for r in reqs]
        assert res.host_tokens.tolist() == [r.host for r in reqs]
    return res, reqs


@st.composite
def paged_case(draw, with_prefilled=False):
    B = draw(st.sampled_from([1, 2, 4, 16]))
    n = draw(st.integers(1, 12))
    inputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(2 if with_prefilled else 1, 40), min_size=n, max_size=n))
    fit = max(-(-(i + o) // B) for i, o in zip(inputs, outputs)) + 1
    watermark = draw(st.sampled_from([0.0, 0.01, 0.2]))
    blocks = draw(st.integers(fit, 4 * fit))
    blocks = max(blocks, -(-fit // (1 - watermark)) + 1)
    kv = Paged(block_size=B, watermark=watermark, preemption=draw(st.sampled_from(["recompute", "swap"])),
               swap_gbs=draw(st.sampled_from([1e-6, 1e-3])))
    setup = tiny_setup(kv=draw(st.sampled_from([0, 1])), budget=draw(st.sampled_from([1, 4, 16, 64])),
                       seqs=draw(st.integers(1, 8)), cap=int(blocks) * B).replace(kv=kv)
    gaps = draw(st.lists(st.sampled_from([0.0, TICK, 0.01, 1.0]), min_size=n, max_size=n))
    prefilled = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if with_prefilled else None
    return setup, np.cumsum(gaps).tolist(), inputs, outputs, prefilled


@PROFILE
@given(case=paged_case())
def test_paged_engine_equals_the_plain_reference(case):
    setup, arrivals, inputs, outputs, _ = case
    assert_same_as_reference(setup, arrivals, inputs, outputs)


@PROFILE
@given(case=paged_case(with_prefilled=True))
def test_paged_with_prefilled_arrivals_equals_the_plain_reference(case):
    setup, arrivals, inputs, outputs, prefilled = case
    assert_same_as_reference(setup, arrivals, inputs, outputs, prefilled=prefilled)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_paged_with_room_to_spare_is_the_reservation_rule(data):
    # With KV for everything at once and no watermark, paging changes nothing: same times, bit for bit.
    n = data.draw(st.integers(1, 15))
    inputs = data.draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    outputs = data.draw(st.lists(st.integers(1, 400), min_size=n, max_size=n))
    arrivals = np.cumsum(data.draw(st.lists(st.sampled_from([0.0, 1e-3, 0.05]), min_size=n, max_size=n))).tolist()
    base = tiny_setup(kv=1, budget=64, seqs=8, cap=10**6)
    ref = run_requests(base, arrivals, inputs, outputs)
    res = run_requests(base.replace(kv=Paged(block_size=16, watermark=0)), arrivals, inputs, outputs)
    assert np.array_equal(res.finish, ref.finish) and np.array_equal(res.first_token, ref.first_token)
    assert res.preemptions.sum() == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=paged_case(), cuts=st.lists(st.floats(0, 3.0), max_size=20))
def test_cut_anywhere_equals_the_uncut_run(case, cuts):
    # The resumable instance stops quiet runs at every `until`; the result must not move.
    setup, arrivals, inputs, outputs, _ = case
    whole = drive(setup, arrivals, inputs, outputs)
    res = driven_run(setup, arrivals, inputs, outputs, cuts)
    assert np.array_equal(res.finish, whole.finish) and np.array_equal(res.steps.start, whole.steps.start)
    assert np.array_equal(res.preemptions, whole.preemptions)


def test_preemption_by_recompute_timeline():
    # Blocks of 2 tokens, 4 blocks, no watermark; a step lasts max(T, 2) ticks. r0, r1: prompt 2,
    # output 5, both at 0.
    # step0 t0:  both admitted (1 block each, 2 free), prompts computed: 4 tokens -> t4, first tokens
    # step1 t4:  both hold L=2 tokens, a full block: each needs one (2 free -> 0)      -> t6
    # step2 t6:  L=3, nothing needed                                                   -> t8
    # step3 t8:  L=4, both need a block, none free: r1 (most recent) is preempted; its 2 blocks
    #            free, r0 takes one. No admission in a preempting step. 1 token         -> t10
    # step4 t10: r1 (back at the head) now needs its prompt + 3 generated = 5 tokens = 3 blocks;
    #            1 free: it waits. r0's 5th token                                       -> t12, r0 done
    # step5 t12: r1 admitted, recomputes 5 tokens (5 ticks), emits its 4th token       -> t17
    # step6 t17: r1's 5th token                                                         -> t19, r1 done
    setup = tiny_setup(budget=16, cap=8).replace(kv=Paged(block_size=2, watermark=0))
    res, _ = assert_same_as_reference(setup, [0.0, 0.0], [2, 2], [5, 5])
    assert ticks(res.first_token) == [4, 4]
    assert ticks(res.finish) == [12, 19]
    assert res.preemptions.tolist() == [0, 1]
    assert res.steps.tokens.tolist() == [4, 2, 2, 1, 1, 5, 1]
    assert ticks(res.steps.start) == [0, 4, 6, 8, 10, 12, 17]
    assert res.steps.recompute.tolist() == [False] * 5 + [True, False]
    # The reservation rule on the same instance runs them one after the other (7 + 7 > 8 tokens).
    reserve = run_requests(tiny_setup(budget=16, cap=8), [0.0, 0.0], [2, 2], [5, 5])
    assert ticks(reserve.finish) == [10, 20]


def test_prompt_blocks_are_allocated_chunk_by_chunk_timeline():
    # vLLM V1: admission checks that the whole prompt fits, but a chunk's blocks are taken only when
    # it is scheduled. Blocks of 1 token, 7 blocks, budget 3, max(T, 2) ticks a step.
    # r0: prompt 1, output 6; r1: prompt 6, output 1; both at 0.
    # step0 t0:  r0 admitted (1 block, 6 free); r1: 6 blocks fit, admitted with its first chunk of
    #            2 (2 blocks, 4 free). 3 tokens                                        -> t3, r0's 1st
    # step1 t3:  r0 needs a block (3 free); r1's chunk of 2 (1 free)                    -> t6
    # step2 t6:  r0 needs a block (0 free); r1's chunk of 2 does not fit: r1 is the victim itself,
    #            its 4 blocks free (4 free). 1 token                                    -> t8
    # steps 3-5: r1 (6 blocks) does not fit beside r0; r0 decodes                  -> t14, r0 done
    # step6 t14: r1 admitted again, chunk 3 (recompute); step7: chunk 3            -> t20, r1 done
    # (allocating the whole prompt at admission, r1 would take all 6 free blocks in step0 and be
    # preempted in step1.)
    setup = tiny_setup(budget=3, seqs=2, cap=7).replace(kv=Paged(block_size=1))
    res, _ = assert_same_as_reference(setup, [0.0, 0.0], [1, 6], [6, 1])
    assert ticks(res.first_token) == [3, 20]
    assert ticks(res.finish) == [14, 20]
    assert res.preemptions.tolist() == [0, 1]
    assert res.steps.tokens.tolist() == [3, 3, 1, 1, 1, 1, 3, 3]
    assert ticks(res.steps.start) == [0, 3, 6, 8, 10, 12, 14, 17]
    assert res.steps.recompute.tolist() == [False] * 6 + [True, False]
    ref = vllm_run(setup, [0.0, 0.0], [1, 6], [6, 1])            # vLLM V1's rule, restated plainly
    assert [s.scheduled for s in ref.steps] == [{0: 1, 1: 2}, {0: 1, 1: 2}] + [{0: 1}] * 4 + [{1: 3}] * 2


def test_preemption_by_swap_timeline():
    # As above with 1 byte of KV per token (a step lasts max(T, 2 + C) ticks) and swap over a link
    # of 1 byte/s (moving T tokens takes T seconds, added to the step).
    # step0 t0: 4 tokens over C=0 -> 4 -> t4. step1: C = 2*(2+1) = 6 -> 8 -> t12.
    # step2: C = 8 -> 10 -> t22. step3: r1 swapped out (KV 2 + 3 - 1 = 4 tokens: 4 s added), r0
    # alone over C = 5. step4: r1 (4 + 1 tokens = 3 blocks) does not fit; r0's last token.
    # step5: r1 swapped in (4 s), a decoder again over C = 5 (its 4th token); step6: its 5th.
    setup = tiny_setup(kv=1, budget=16, cap=8).replace(kv=Paged(block_size=2, watermark=0, preemption="swap", swap_gbs=1e-9))
    res, _ = assert_same_as_reference(setup, [0.0, 0.0], [2, 2], [5, 5])
    assert res.preemptions.tolist() == [0, 1]
    assert res.steps.swap.tolist() == [False, False, False, True, False, True, False]
    assert res.steps.tokens.tolist() == [4, 2, 2, 1, 1, 1, 1]
    assert res.steps.extra_s.tolist() == [0, 0, 0, 4.0, 0, 4.0, 0]
    assert ticks(res.steps.duration - res.steps.extra_s) == [4, 8, 10, 7, 8, 7, 8]
    assert res.finish[0] == pytest.approx(4 + 37 * TICK, abs=1e-12)     # r0: 37 ticks and the 4 s swap-out


def test_paging_admits_more_and_pays_with_preemptions_when_kv_is_tight(chapter_like):
    # Outputs far shorter than their worst case on average: the reservation rule holds KV for 2,000
    # output tokens per request, paging only for what is written.
    load = workload.offline(300, 500, lengths.Uniform(10, 2000), seed=1)
    tight = chapter_like.replace(kv_capacity_tokens=60_000)
    reserve = run(tight, load)
    paged = run(tight.replace(kv=Paged()), load)
    s_res, s_pag = summarize(reserve, None, None), summarize(paged, None, None)
    running = lambda r: np.max(r.steps.decoders)                           # noqa: E731
    assert running(paged) > running(reserve)
    assert s_pag["output_tps"] > 1.2 * s_res["output_tps"]
    assert s_pag["preemptions"] > 0 and paged.steps.recompute.any()
    # with KV to spare, nobody is preempted
    roomy = run(chapter_like.replace(kv=Paged()), load)
    assert roomy.preemptions.sum() == 0




@pytest.mark.parametrize("make, field", [
    (lambda: Paged(block_size=0), "Paged.block_size"),
    (lambda: Paged(block_size=1.5), "Paged.block_size"),
    (lambda: Paged(watermark=1.0), "Paged.watermark"),
    (lambda: Paged(preemption="evict"), "Paged.preemption"),
    (lambda: Paged(preemption="swap"), "Paged.swap_gbs"),
    (lambda: tiny_setup().replace(kv="lru"), "Setup.kv"),
    (lambda: tiny_setup(cap=8).replace(kv=Paged(block_size=16)), "kv_capacity_tokens"),
])
def test_bad_input_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_a_request_that_cannot_fit_alone_is_refused():
    setup = tiny_setup(cap=64).replace(kv=Paged(block_size=16, watermark=0.25))
    with pytest.raises(ValueError, match="do not fit the KV even alone"):
        run(setup, workload.offline(1, 60, 5))
    run(setup, workload.offline(1, 60, 4))            # 64 tokens = all 4 blocks: alone, no watermark


def test_the_watermark_is_kept_only_while_others_run():
    # vLLM V1: the watermark is spared only when requests are running. 10 blocks of 1 token,
    # watermark 0.2 (2 blocks). r0 (prompt 9, alone) is admitted into 9 of 10 blocks; r1 (prompt 1)
    # arrives while r0 runs: 1 free block - 1 < 2 spare, so it waits until r0 finishes.
    setup = tiny_setup(budget=16, cap=10).replace(kv=Paged(block_size=1, watermark=0.2))
    res = run_requests(setup, [0.0, 0.0], [9, 1], [1, 1])
    assert ticks(res.first_token) == [9, 11]           # r0: 9 ticks; r1 only after, max(1, 2) ticks
    assert res.preemptions.tolist() == [0, 0]


def test_reserve_by_name_is_the_default():
    base = tiny_setup()
    assert base.replace(kv="reserve") == base
    assert Setup(**{**base.__dict__, "kv": None}) == base
