"""Prefill attention FLOPs (``Setup.attn_flops_per_pair``): the engine against the plain loop, and
the pair count worked by hand."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import check_against_reference
from sim import Setup, run, workload
from sim.setup import attention_pairs

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_pairs_of_a_chunked_prompt_add_up_to_the_whole_prompts():
    # A 10-token prompt in chunks of 4, 4, 2: 10 * 11 / 2 = 55 pairs in all.
    assert attention_pairs(0, 4) == 1 + 2 + 3 + 4
    assert attention_pairs(4, 4) == 5 + 6 + 7 + 8
    assert attention_pairs(8, 2) == 9 + 10
    assert attention_pairs(0, 4) + attention_pairs(4, 4) + attention_pairs(8, 2) == 55


def test_attention_adds_compute_at_its_own_efficiency():
    s = Setup(params=1e9, weight_bytes=0.0, kv_bytes_per_token=0.0, kv_capacity_tokens=10**6,
              peak_flops=1e14, mfu=0.5, step_overhead=0.0, attn_flops_per_pair=1e6, attn_mfu=0.25)
    assert s.step_time(100, 0) == 2e9 * 100 / 5e13                      # no pairs: the matmuls only
    assert s.step_time(100, 0, 5050) == pytest.approx(2e9 * 100 / 5e13 + 1e6 * 5050 / 2.5e13)
    with pytest.raises(ValueError, match="attn_mfu"):
        s.replace(attn_mfu=0)
    with pytest.raises(ValueError, match="attn_flops_per_pair"):
        s.replace(attn_flops_per_pair=-1)


def test_step_log_records_the_pairs_of_each_step():
    # One 10-token prompt with a budget of 4: chunks 4, 4, 2, then decode steps with no pairs.
    s = Setup(params=1e9, weight_bytes=1e9, kv_bytes_per_token=1.0, kv_capacity_tokens=100,
              max_num_batched_tokens=4, attn_flops_per_pair=1e7)
    res = run(s, workload.offline(1, 10, 3))
    assert res.steps.pairs.tolist() == [10, 26, 19, 0, 0]
    assert np.array_equal(res.steps.duration, s.step_times(res.steps.tokens, res.steps.context, res.steps.pairs))


@FAST
@given(attn=st.sampled_from([0.0, 1e5, 1e7, 1e9]), serial=st.sampled_from([0.0, 1.0]),
       n=st.integers(1, 25), seed=st.integers(0, 99), budget=st.integers(1, 64), seqs=st.integers(1, 10),
       load=st.floats(0.01, 50), closed=st.booleans())
def test_attention_term_matches_reference(attn, serial, n, seed, budget, seqs, load, closed):
    setup = Setup(params=1e9, weight_bytes=1e9, kv_bytes_per_token=4e6, kv_capacity_tokens=600,
                  peak_flops=1e14, bandwidth=1e12, step_overhead=1e-4, max_num_batched_tokens=budget,
                  max_num_seqs=seqs, kv_serial=serial, attn_flops_per_pair=attn, attn_mfu=0.3)
    check_against_reference(setup, n, seed, load, closed)
