"""The engine's ``Paged`` against vLLM V1's rule as tests/vllm_reference.py states it (vref's plain
per-request stepper), bit for bit: first-token and finish times, and every model step's start,
tokens and context.

Covered: FCFS, recompute preemption, chunked prefill with per-chunk block allocation and the
whole-prompt fit check, the watermark spared only while requests run, empty (all-preempted)
steps, no prefix cache. ``max_num_seqs <= max_num_batched_tokens`` as vLLM requires, so decoders
are never cut by the token budget (the engine's aggregates rely on it). Not yet covered (the engine
differs): prefix caching (V1 names blocks when scheduled and shares them with running requests;
the engine names them at release), speculative decoding with paged KV, ``priority``.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import tiny_setup
from sim.engine import run_requests
from sim.kv import Paged
from vllm_reference import vllm_run

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
        kv=Paged(block_size=B, watermark=watermark))
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
