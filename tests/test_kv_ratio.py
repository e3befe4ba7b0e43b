"""``Setup(kv=RatioReserve(...))``, SGLang's new_token_ratio admission with retraction
(sim/kv/ratio.py), against the plain restatement in tests/sglang_reference.py, bit for bit, and
hand-worked timelines on the tiny instance (a step of T tokens over C of context lasts
max(T, 2) ticks with kv=0)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from sglang_reference import sglang_run
from sim import Setup
from sim.engine import Instance, run_requests
from sim.kv import Paged, RatioReserve, admission_policy

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ratio_runs(draw):
    budget = draw(st.integers(2, 24))
    seqs = draw(st.integers(1, min(8, budget)))
    n = draw(st.integers(1, 12))
    longest = draw(st.sampled_from([40, 40, 4]))         # short prompts: several victims per retraction
    inputs = draw(st.lists(st.integers(1, longest), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, draw(st.sampled_from([30, 30, 3]))), min_size=n, max_size=n))
    max_new = draw(st.sampled_from([None, None, max(outputs), max(outputs) + 7]))
    clip = draw(st.sampled_from([4096, 4096, 3, 10]))
    init = draw(st.sampled_from([0.7, 0.7, 1.0, 0.3, 0.05]))
    low = init * draw(st.sampled_from([0.14, 0.5, 1.0]))
    decay = draw(st.sampled_from([(init - low) / 600, (init - low) / 7, 0.0]))
    policy = RatioReserve(init_new_token_ratio=init, min_new_token_ratio=low, new_token_ratio_decay=decay,
                          retract_decode_steps=draw(st.sampled_from([20, 0, 3])), clip_max_new_tokens=clip,
                          max_new_tokens=max_new)
    caps = [max_new or o for o in outputs]
    fit = max(i + min(c, clip) for i, c in zip(inputs, caps)) + 1
    fit = max(fit, max(i + o for i, o in zip(inputs, outputs)))
    cap = draw(st.integers(fit, fit * 3))                   # tight to roomy: retractions
    kv = draw(st.sampled_from([0, 1]))
    setup = tiny_setup(kv=kv, budget=budget, seqs=seqs, cap=cap).replace(
        kv=policy, host_s_per_seq=draw(st.sampled_from([0.0, 0.0, TICK])))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.001, 0.01, 0.05]), min_size=n, max_size=n))
    return setup, list(np.cumsum(gaps)), inputs, outputs


def assert_same(res, ref):
    assert np.array_equal(res.first_token, [r.first_token for r in ref.reqs])
    assert np.array_equal(res.finish, [r.finish for r in ref.reqs])
    assert res.preemptions.tolist() == [r.retractions for r in ref.reqs]
    log = res.steps
    assert np.array_equal(log.start, [s.start for s in ref.steps])
    assert log.tokens.tolist() == [s.tokens for s in ref.steps]
    assert log.context.tolist() == [s.context for s in ref.steps]
    assert log.pairs.tolist() == [s.pairs for s in ref.steps]
    assert log.decoders.tolist() == [s.decoders for s in ref.steps]


@PROFILE
@given(ratio_runs())
def test_ratio_engine_equals_the_sglang_reference(case):
    setup, arrivals, inputs, outputs = case
    res = run_requests(setup, arrivals, inputs, outputs)
    assert_same(res, sglang_run(setup, arrivals, inputs, outputs))


# Cases hypothesis found for the rule's rarest branches (kept so that every run covers them).
RARE = {
    "several retracted": (dict(budget=7, seqs=7, cap=30), dict(clip_max_new_tokens=3),
                          [0, 0, 0] + [0.001] * 7, [1] * 10, [1, 6, 9, 5, 5, 5, 5, 5, 1, 1]),
    "chunk cut by memory": (dict(budget=4, seqs=3, cap=39), dict(clip_max_new_tokens=3),
                            [0.0] * 8, [1, 1, 1, 1, 1, 7, 13, 8], [1, 1, 1, 1, 1, 8, 4, 1]),
    "held back while full": (dict(budget=12, cap=40),
                             dict(init_new_token_ratio=0.5, min_new_token_ratio=0.5, new_token_ratio_decay=0.0),
                             [0, 0, 0], [4, 4, 4], [10, 10, 10]),
    "retraction behind waiting": (dict(budget=8, cap=20),
                                  dict(init_new_token_ratio=0.1, min_new_token_ratio=0.1,
                                       new_token_ratio_decay=0.0, retract_decode_steps=0),
                                  [0, TICK, 10 * TICK], [4, 4, 4], [8, 8, 3]),
}


@pytest.mark.usefixtures("engine_path")
@pytest.mark.parametrize("branch", sorted(RARE))
def test_rare_branches_equal_the_reference(branch):
    shape, policy, arrivals, inputs, outputs = RARE[branch]
    setup = tiny_setup(**shape).replace(kv=RatioReserve(**policy))
    ref = sglang_run(setup, arrivals, inputs, outputs)
    assert ref.seen[branch] > 0                       # the case still reaches its branch
    assert_same(run_requests(setup, arrivals, inputs, outputs), ref)


# --- hand-worked timelines (ticks of 1/1024 s; with kv=0 a step of T tokens lasts max(T, 2)) ------

def ratio_setup(ratio, cap, budget=8, **policy):
    return tiny_setup(budget=budget, cap=cap).replace(
        kv=RatioReserve(init_new_token_ratio=ratio, min_new_token_ratio=ratio, new_token_ratio_decay=0.0, **policy))


def test_admission_reserves_only_the_ratio_of_running_outputs():
    # A and B (4 + 10 each) are admitted at t=0, each reserving its whole output in that pass:
    # rem_total after them is (40 - 8) - (10 + 10) = 12. C arrives at 9 ticks; at step 2 (t=10)
    # the decoders hold 12 tokens and have 8 + 8 outputs left: rem_total = 28 - 0.5 x 16 = 20 > 14,
    # so C is admitted at once. The handbook's reservation (14 + 14 + 14 > 40) makes it wait for
    # A's finish at 26 ticks.
    arrivals, inputs, outputs = [0, 0, 9 * TICK], [4, 4, 4], [10, 10, 10]
    res = run_requests(ratio_setup(0.5, 40), arrivals, inputs, outputs)
    assert ticks(res.first_token) == [8, 8, 16]
    assert ticks(res.steps.start)[:4] == [0, 8, 10, 16]
    assert res.steps.tokens.tolist()[:4] == [8, 2, 6, 3]
    reserve = run_requests(ratio_setup(0.5, 40).replace(kv=None), arrivals, inputs, outputs)
    assert ticks(reserve.first_token) == [8, 8, 30]


def test_a_refusal_holds_admission_until_a_request_finishes():
    # With C at t=0 and budget 12, step 0 admits A and B and refuses C (14 >= 12): the batch is
    # full. From step 1 rem_total would be 21 (> 14), but SGLang does not try again until a
    # request finishes (batch_is_full): C starts when A and B finish at 26 ticks.
    res = run_requests(ratio_setup(0.5, 40, budget=12), [0, 0, 0], [4, 4, 4], [10, 10, 10])
    assert ticks(res.first_token) == [8, 8, 30]
    assert ticks(res.finish) == [26, 26, 48]


def test_the_ratio_decays_per_decode_step_to_its_floor():
    p = RatioReserve(init_new_token_ratio=0.7, min_new_token_ratio=0.5, new_token_ratio_decay=0.1)
    inst = Instance(tiny_setup(cap=100).replace(kv=p))
    inst.submit(0.0, 4, 10)
    seen = []
    for until in (1, 5, 7, 9, 11):                      # steps start at 0 (prefill), 4, 6, 8, 10
        inst.advance(until * TICK)
        seen.append(inst.kv.ratio)
    r1 = max(0.7 - 0.1, 0.5)
    assert seen == [0.7, r1, max(r1 - 0.1, 0.5), 0.5, 0.5]      # a prefill-only step does not decay
    inst.advance()
    assert ticks(inst.result().finish) == [22]


def test_a_retraction_frees_the_victim_raises_the_ratio_and_readmits_it():
    # ratio 0.1: A (4 + 8) runs from t=0, B (4 + 8) is admitted at step 1 (12 < 15 - 0.7).
    # Both decode 2 tokens a step until step 7 (t=19): 19 tokens held, 1 free < 2 decoders.
    # B (6 generated, fewer than A's 7) is retracted, its 9 tokens freed; the ratio becomes
    # (7 + 0 x 1) / 8 = 0.875 over A alone (retract_decode_steps=0). A finishes at 21; B prefills
    # its 4 + 6 tokens (8 + 2 over two steps), emits its 7th token at 31, its 8th at 33.
    setup = ratio_setup(0.1, 20, retract_decode_steps=0)
    inst = Instance(setup)
    for a in (0, TICK):
        inst.submit(a, 4, 8)
    inst.advance(20 * TICK)
    assert inst.kv.ratio == 7 / 8 and inst.queue_len() == 1
    inst.advance()
    res = inst.result()
    assert ticks(res.first_token) == [4, 9]
    assert ticks(res.finish) == [21, 33]
    assert res.preemptions.tolist() == [0, 1]
    assert ticks(res.steps.start) == [0, 4, 9, 11, 13, 15, 17, 19, 21, 29, 31]
    assert res.steps.tokens.tolist() == [4, 5, 2, 2, 2, 2, 2, 1, 8, 2, 1]
    assert res.steps.context.tolist() == [0, 5, 11, 13, 15, 17, 19, 11, 0, 8, 11]
    assert res.steps.recompute.tolist() == [False] * 8 + [True, False, False]


def test_the_retracted_request_goes_behind_the_waiting_ones():
    # As above, with C (4 + 3) arriving at 10 ticks: refused at step 3 (7 >= 7 - 0.1 x 11), it
    # waits; B, retracted at step 7, joins the queue behind it, so step 8 admits C first (its
    # whole prompt, 4 tokens) and then B's first chunk (4 of 10). vLLM's head-of-queue victim
    # would have come first.
    res = run_requests(ratio_setup(0.1, 20, retract_decode_steps=0), [0, TICK, 10 * TICK], [4, 4, 4], [8, 8, 3])
    assert ticks(res.first_token) == [4, 9, 29]
    assert ticks(res.finish) == [21, 38, 38]
    assert res.steps.tokens.tolist() == [4, 5, 2, 2, 2, 2, 2, 1, 8, 7, 2]


def test_a_chunk_is_cut_to_the_memory_left_and_the_last_decoder_can_be_retracted():
    # ratio 0.1, budget 4: B (14 + 1) is admitted at step 1 beside decoder A (2 + 8) and prefills
    # 3 tokens a step; at step 5 rem_total = (20 - 19) - 0.1 x 3 = 0.7: its chunk is cut to 0,
    # likewise at step 6. At step 7 A's token does not fit (20 held): A, the only decoder, is
    # retracted (SGLang asserts here), B's last 2 tokens run and it finishes at 24; A prefills
    # 2 + 7 tokens in 4-token chunks and finishes at 34.
    res = run_requests(ratio_setup(0.1, 20, budget=4), [0, TICK], [2, 14], [8, 1])
    assert res.steps.tokens.tolist() == [2, 4, 4, 4, 4, 1, 1, 2, 4, 4, 1]
    assert ticks(res.finish) == [34, 24]
    assert res.preemptions.tolist() == [1, 0]


# --- the policy's surface ----------------------------------------------------------------------

def test_names_and_engine_presets():
    assert tiny_setup().replace(kv="ratio").kv == RatioReserve()
    assert isinstance(admission_policy("sglang"), RatioReserve)
    assert admission_policy("vllm") == Paged()
    assert tiny_setup().replace(kv=admission_policy("trtllm")).kv is None      # the handbook's Reserve
    with pytest.raises(ValueError, match="engine must be one of"):
        admission_policy("tgi")
    defaults = RatioReserve.sglang()
    assert defaults == RatioReserve()
    assert RatioReserve.sglang(2.0).init_new_token_ratio == 1.0


@pytest.mark.parametrize("field, value, words", [
    ("init_new_token_ratio", 0.0, "init_new_token_ratio must be a finite number > 0"),
    ("init_new_token_ratio", 1.5, r"init_new_token_ratio must be in \(0, 1\]"),
    ("min_new_token_ratio", 0.9, "min_new_token_ratio must be in"),
    ("new_token_ratio_decay", -0.1, "new_token_ratio_decay must be a finite number >= 0"),
    ("retract_decode_steps", -1, "retract_decode_steps must be a whole number >= 0"),
    ("clip_max_new_tokens", 0, "clip_max_new_tokens must be a whole number >= 1"),
    ("max_new_tokens", 2.5, "max_new_tokens must be a whole number >= 1"),
])
def test_bad_fields_name_the_field_and_range(field, value, words):
    with pytest.raises(ValueError, match=words):
        RatioReserve(**{field: value})


def test_what_is_not_modelled_is_refused_clearly():
    from sim.kv import PrefixCache
    with pytest.raises(ValueError, match="prefix_cache is not modelled with kv=RatioReserve"):
        Instance(tiny_setup().replace(kv="ratio", prefix_cache=PrefixCache()))
    with pytest.raises(ValueError, match="max_new_tokens must be >= every output_len"):
        run_requests(tiny_setup().replace(kv=RatioReserve(max_new_tokens=5)), [0.0], [4], [6])
    inst = Instance(tiny_setup().replace(kv="ratio"))
    inst.submit(0.0, 4, 6, prefilled=True)
    with pytest.raises(ValueError, match="PD decode instances"):
        inst.advance()


@pytest.mark.parametrize("start", [0.7, 0.1005, 0.05])       # above, near and below the floor 0.098
def test_a_quiet_run_decays_as_its_event_steps_would(start):
    # A retraction may leave the ratio below the floor (SGLang sets it to the survivors' share);
    # the next decay lifts it to the floor. ``grow`` (k quiet steps) must equal k event decays.
    from sim.kv import RatioManager
    quiet, event = (RatioManager(tiny_setup().replace(kv="ratio")) for _ in range(2))
    quiet.ratio = event.ratio = start
    quiet.grow(0, 700)
    for _ in range(700):
        event._decay()
    assert quiet.ratio == event.ratio == RatioReserve().min_new_token_ratio
