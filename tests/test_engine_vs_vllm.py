"""The engine's ``Paged`` against vLLM V1's rule as tests/vllm_reference.py states it (vref's plain
per-request stepper), bit for bit: first-token and finish times, preemptions, prefix-cache hits,
and every model step's start, tokens and context.

Covered: FCFS, recompute preemption, chunked prefill with per-chunk block allocation and the
whole-prompt fit check, the watermark spared only while requests run, empty (all-preempted)
steps; and prefix caching as V1 does it (blocks named when scheduled and shared with running
requests and with requests admitted later in the same step, private names for blocks no segment
covers so a readmitted request hits its own, duplicate copies, one free queue with unnamed blocks
at its head; shared system prompts, session segments covering the answer, tight KV so eviction
and preemption happen). ``max_num_seqs <= max_num_batched_tokens`` as vLLM requires, so decoders
are never cut by the token budget (the engine's aggregates rely on it). Not covered here:
speculative decoding with paged KV, ``priority`` (tests/test_engine_spec_paged.py,
tests/test_engine_priority.py), the host tier and swap (not V1: tests/test_prefix_cache.py and
tests/test_kv_paged.py check them against tests/kv_reference.py).
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, tiny_setup
from sim.engine import run_requests
from sim.kv import Paged, PrefixCache
from vllm_reference import engine_mismatches, vllm_run

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def paged_runs(draw):
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
        kv=Paged(block_size=B, watermark=watermark), host_s_per_seq=draw(st.sampled_from([0.0, 0.0, TICK])))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.001, 0.01, 0.05]), min_size=n, max_size=n))
    arrivals = list(np.cumsum(gaps))
    return setup, arrivals, inputs, outputs


@PROFILE
@given(paged_runs())
def test_paged_engine_equals_the_vllm_v1_reference(case):
    setup, arrivals, inputs, outputs = case
    res = run_requests(setup, arrivals, inputs, outputs)
    ref = vllm_run(setup, arrivals, inputs, outputs)
    assert np.array_equal(res.first_token, [r.first_token for r in ref.reqs])
    assert np.array_equal(res.finish, [r.finish for r in ref.reqs])
    assert res.preemptions.tolist() == [r.preemptions for r in ref.reqs]
    log = res.steps
    assert np.array_equal(log.start, [s.start for s in ref.steps])
    assert log.tokens.tolist() == [s.tokens for s in ref.steps]
    assert log.context.tolist() == [s.context for s in ref.steps]


@st.composite
def prefix_runs(draw):
    """Requests with prefix identity and a tight KV: shared system prompts (a few keys, each with
    its own length), session-like segments that cover the answer (a later request of the same
    session repeats it), private tails; preemption and eviction happen."""
    B = draw(st.sampled_from([1, 2, 4, 8]))
    budget = draw(st.integers(2, 24))
    seqs = draw(st.integers(1, min(8, budget)))
    n = draw(st.integers(1, 12))
    system = draw(st.lists(st.integers(1, 24), min_size=3, max_size=3))
    inputs, outputs, prefixes = [], [], []
    for _ in range(n):
        inp, out = draw(st.integers(1, 40)), draw(st.integers(1, 16))
        segs = []
        k = draw(st.sampled_from([None, 0, 0, 1, 2]))
        if k is not None and system[k] <= inp:
            segs.append((k, system[k]))
        kind = draw(st.sampled_from(["none", "session", "prompt"]))
        last = segs[-1][1] if segs else 0
        if kind == "session":              # the segment covers the answer (multi-turn chat)
            segs.append((draw(st.integers(10, 13)), inp + out))
        elif kind == "prompt" and inp > last:
            segs.append((draw(st.integers(20, 23)), draw(st.integers(last + 1, inp))))
        inputs.append(inp)
        outputs.append(out)
        prefixes.append(tuple(segs) or None)
    fit = max(i + o for i, o in zip(inputs, outputs))
    blocks = draw(st.integers(-(-fit // B), -(-fit // B) * 3))      # tight: preemption, eviction
    watermark = draw(st.sampled_from([0.0, 0.0, 0.1]))
    kv = draw(st.sampled_from([0, 1]))
    setup = tiny_setup(kv=kv, budget=budget, seqs=seqs, cap=blocks * B).replace(
        kv=Paged(block_size=B, watermark=watermark), prefix_cache=PrefixCache(),
        host_s_per_seq=draw(st.sampled_from([0.0, 0.0, TICK])))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.001, 0.01, 0.05]), min_size=n, max_size=n))
    arrivals = list(np.cumsum(gaps))
    return setup, arrivals, inputs, outputs, prefixes


@PROFILE
@given(prefix_runs())
def test_paged_engine_with_prefix_caching_equals_the_vllm_v1_reference(case):
    setup, arrivals, inputs, outputs, prefixes = case
    res = run_requests(setup, arrivals, inputs, outputs, prefix=prefixes)
    ref = vllm_run(setup, arrivals, inputs, outputs, prefixes)
    assert engine_mismatches(res, ref) == []
    assert np.array_equal(res.first_token, [r.first_token for r in ref.reqs])
    assert np.array_equal(res.finish, [r.finish for r in ref.reqs])
    assert res.preemptions.tolist() == [r.preemptions for r in ref.reqs]
    assert res.cached_tokens.tolist() == [sum(r.hits) for r in ref.reqs]
    log = res.steps
    assert np.array_equal(log.start, [s.start for s in ref.steps])
    assert log.tokens.tolist() == [s.tokens for s in ref.steps]
    assert log.context.tolist() == [s.context for s in ref.steps]



def test_priority_with_prefix_caching_is_refused_until_it_equals_v1():
    """Priority scheduling over V1's prefix naming is not yet exact: on this case (all priorities
    equal, one session segment, 23 one-token blocks) request 8's first token comes at 0.0361 s
    where the reference says 0.0381 s, so ``Setup`` refuses the combination."""
    import pytest
    setup = tiny_setup(kv=0, budget=10, seqs=4, cap=23).replace(kv=Paged(block_size=1, policy="priority"))
    arrivals = [0.0] * 4 + [0.001] * 7
    inputs, outputs = [1, 1, 14, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 6, 1, 4, 4, 1, 1, 1, 1, 1]
    prefixes = [None] * 5 + [((10, 5),)] + [None] * 5
    ref = vllm_run(setup, arrivals, inputs, outputs, prefixes, [0] * 11, prefix_caching=True)
    assert ref.reqs[8].first_token == 0.0380859375
    with pytest.raises(ValueError, match="prefix_cache with Paged.policy='priority'"):
        setup.replace(prefix_cache=PrefixCache())
