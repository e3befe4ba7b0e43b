"""Speculative decoding (sim/speculative.py): the engine against the plain reference bit for bit,
a hand-worked timeline, the closed-form speedup at low load and its shrinking under load."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from test_kv_paged import assert_same_as_reference
from sim import run, summarize, workload
from sim.speculative import Speculative

PROFILE = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROFILE
@given(data=st.data())
def test_speculative_engine_equals_the_plain_reference(data):
    n = data.draw(st.integers(1, 12))
    inputs = data.draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    outputs = data.draw(st.lists(st.integers(2, 60), min_size=n, max_size=n))
    spec = Speculative(k=data.draw(st.integers(1, 6)), alpha=data.draw(st.sampled_from([0.0, 0.5, 0.9])),
                       draft_cost=data.draw(st.sampled_from([0.0, 0.1])), seed=data.draw(st.integers(0, 9)))
    setup = tiny_setup(kv=data.draw(st.sampled_from([0, 1])), budget=data.draw(st.sampled_from([1, 4, 16, 64])),
                       seqs=data.draw(st.integers(1, 8)), cap=200).replace(speculative=spec)
    arrivals = np.cumsum(data.draw(st.lists(st.sampled_from([0.0, TICK, 0.01, 1.0]), min_size=n, max_size=n)))
    prefilled = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    res, reqs = assert_same_as_reference(setup, arrivals.tolist(), inputs, outputs, prefilled=prefilled)
    assert res.spec_steps.tolist() == [r.spec_steps for r in reqs]


def test_speculative_timeline():
    # k = 2 drafts, alpha = 0.5, draft_cost = 0.25, seed 0: request 0's draws give 1, 1, 3, then 1
    # (of 1 still needed) tokens per decode step. Prompt 4 (4 ticks) emits token 1; each decode step
    # computes 3 tokens (max(3, 2) = 3 ticks) plus 2 drafts x 0.25 x a 1-token step (2 ticks) = 1 tick.
    spec = Speculative(k=2, alpha=0.5, draft_cost=0.25, seed=0)
    assert spec.emissions(0, 6) == [1, 1, 3, 1]
    res, _ = assert_same_as_reference(tiny_setup().replace(speculative=spec), [0.0], [4], [7])
    assert res.steps.tokens.tolist() == [4, 3, 3, 3, 3]
    assert ticks(res.steps.duration) == [4, 4, 4, 4, 4]
    assert ticks(res.steps.extra_s) == [0, 1, 1, 1, 1]
    assert ticks(res.finish) == [20] and res.spec_steps.tolist() == [4]
    s = summarize(res, None, None)
    assert s["spec_tokens_per_step"] == 1.5 and s["spec_acceptance"] == 0.25


def tpot(setup, load):
    return float(np.mean(run(setup, load).tpot))


@pytest.mark.parametrize("k, alpha, cost", [(4, 0.7, 0.05), (2, 0.5, 0.1), (6, 0.85, 0.02)])
def test_low_load_speedup_matches_the_closed_form(chapter_like, k, alpha, cost):
    # One request at a time (arrivals 10 s apart, each done in well under that): the step is
    # memory-bound with or without the k + 1 verified tokens, so TPOT shrinks by
    # (1 - alpha^(k+1)) / ((1 - alpha)(1 + k cost)), up to the draws' noise and the last step's cap.
    load = workload.uniform(0.1, 12, 200, 1500)
    spec = Speculative(k=k, alpha=alpha, draft_cost=cost)
    speedup = tpot(chapter_like, load) / tpot(chapter_like.replace(speculative=spec), load)
    assert speedup == pytest.approx(spec.speedup(), rel=0.03)


def test_speedup_shrinks_as_load_makes_steps_compute_bound(chapter_like):
    spec = Speculative(k=4, alpha=0.7, draft_cost=0.05)
    speedups = []
    for clients in (1, 16, 64):
        load = workload.closed_loop(clients, 4 * clients, 200, 400)
        speedups.append(tpot(chapter_like, load) / tpot(chapter_like.replace(speculative=spec), load))
    assert speedups[0] > speedups[1] > speedups[2]
    assert speedups[0] > 2 and speedups[2] < 0.75 * speedups[0]


@pytest.mark.parametrize("kwargs, field", [
    (dict(alpha=1.0), "Speculative.alpha"),
    (dict(alpha=-0.1), "Speculative.alpha"),
    (dict(k=0), "Speculative.k"),
    (dict(draft_cost=-1), "Speculative.draft_cost"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Speculative(**kwargs)


def test_speculative_with_paged_kv_is_vllm_v1s_recompute_only():
    """Paged KV runs speculation as vLLM V1 does (tests/test_engine_spec_paged.py); V0's swap is refused."""
    from sim.kv import Paged
    tiny_setup().replace(kv="paged", speculative=Speculative())
    with pytest.raises(ValueError, match="Setup.speculative with paged KV needs Paged.preemption='recompute'"):
        tiny_setup().replace(kv=Paged(preemption="swap", swap_gbs=1.0), speculative=Speculative())
