"""The vLLM reference (tests/vllm_reference.py) checked against itself and the other yardsticks:
where vLLM's rule and the handbook's agree (KV never short) it reproduces tests/reference.py and
tests/kv_reference.py bit for bit, with the same step-log conventions (start, tokens, context,
pairs); its speculative draws are sim.speculative's; and over random workloads its block
bookkeeping stays consistent (reference counts, free queue, budget, max_num_seqs)."""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import tiny_setup
from kv_reference import plain_kv_run
from reference import reference_run
from sim.kv import Paged, PrefixCache
from sim.speculative import Speculative
from vllm_reference import VllmV1, block_name, vllm_run

PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_workload(rng, n, max_in=40, max_out=30, span=0.05):
    inputs = [rng.randint(1, max_in) for _ in range(n)]
    outputs = [rng.randint(1, max_out) for _ in range(n)]
    arrivals = sorted(rng.uniform(0, span) for _ in range(n))
    return arrivals, inputs, outputs


@pytest.mark.parametrize("seed", range(40))
def test_ample_kv_matches_the_handbook_rule(seed):
    """KV never short and max_num_seqs <= budget: vLLM's rule is the handbook's, so first-token
    and finish times equal tests/reference.py's, and the step log (start, tokens, context, pairs)
    equals tests/kv_reference.py's (same float operations, same order)."""
    rng = random.Random(seed)
    arrivals, inputs, outputs = random_workload(rng, rng.randint(1, 12))
    base = tiny_setup(kv=rng.choice([0, 1]), budget=rng.choice([8, 16, 64]), seqs=rng.choice([1, 2, 8]),
                      cap=100_000).replace(attn_flops_per_pair=rng.choice([0.0, 3.0]))
    ref = reference_run(base, arrivals, inputs, outputs)
    paged = base.replace(kv=Paged(block_size=rng.choice([1, 4, 16]), watermark=0.0))
    v = vllm_run(paged, arrivals, inputs, outputs)
    assert [r.first_token for r in v.reqs] == [r.first_token for r in ref]
    assert [r.finish for r in v.reqs] == [r.finish for r in ref]
    _, steps, _ = plain_kv_run(paged, arrivals, inputs, outputs)
    assert [(s.start, s.tokens, s.context, s.pairs) for s in v.steps] == [s[:4] for s in steps]


@pytest.mark.parametrize("seed", range(10))
def test_speculative_draws_are_sim_speculatives(seed):
    """Budget never cuts a decoder's drafts and KV is ample: each request's decode steps emit
    exactly Speculative.emissions(request, output_len - 1), and a step's drafts add
    k x draft_cost x step_time(decoders, context) seconds."""
    rng = random.Random(seed)
    spec = Speculative(k=rng.choice([1, 3, 4]), alpha=rng.choice([0.3, 0.7, 0.9]), seed=seed)
    arrivals, inputs, outputs = random_workload(rng, rng.randint(1, 8))
    setup = tiny_setup(kv=1, budget=256, seqs=8, cap=100_000).replace(kv=Paged(block_size=4, watermark=0.0))
    v = vllm_run(setup, arrivals, inputs, outputs, speculative=spec)
    for r in v.reqs:
        decode = [st.emitted[r.id] for st in v.steps if r.id in st.emitted][1:]
        assert decode == spec.emissions(r.id, r.output_len - 1)
    for st in v.steps:
        drafts = spec.k * spec.draft_cost * setup.step_time(st.decoders, st.context) if st.decoders else 0.0
        assert st.extra_s == drafts
        assert st.duration == setup.step_time(st.tokens, st.context, st.pairs) + drafts


@st.composite
def tight_case(draw):
    B = draw(st.sampled_from([1, 2, 4, 16]))
    n = draw(st.integers(1, 10))
    inputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    fit = max(-(-(i + o + 8) // B) for i, o in zip(inputs, outputs))    # every request fits alone
    blocks = draw(st.integers(fit, 3 * fit))
    shared = draw(st.booleans())
    prefixes = [((1, i),) if shared and draw(st.booleans()) else None for i in inputs]
    gaps = draw(st.lists(st.sampled_from([0.0, 0.001, 0.01]), min_size=n, max_size=n))
    arrivals = [sum(gaps[:k + 1]) for k in range(n)]
    spec = draw(st.sampled_from([None, Speculative(k=2, alpha=0.6)]))
    return dict(B=B, blocks=blocks, inputs=inputs, outputs=outputs, prefixes=prefixes, arrivals=arrivals,
                budget=draw(st.sampled_from([4, 16, 64])), seqs=draw(st.sampled_from([1, 3, 8])),
                caching=draw(st.booleans()), watermark=draw(st.sampled_from([0.0, 0.1])),
                policy=draw(st.sampled_from(["fcfs", "priority"])), spec=spec,
                priorities=draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))


def check_pool(s):
    """Reference counts are the holders, the free queue is the unreferenced blocks, names map back."""
    pool = s.pool
    holders = [0] * pool.num_blocks
    for r in s.running:
        assert len(set(r.blocks)) == len(r.blocks)
        for b in r.blocks:
            holders[b] += 1
    assert holders == pool.ref
    assert set(pool.free_queue) == {b for b in range(pool.num_blocks) if pool.ref[b] == 0}
    for name, blocks in pool.cached.items():
        assert all(pool.name[b] == name for b in blocks)
    for r in s.running:
        for j in range(r.num_named):
            assert pool.name[r.blocks[j]] == block_name(r, j, s.B)


@PROFILE
@given(tight_case())
def test_bookkeeping_under_pressure(case):
    """Random workloads on a tight KV: every step respects the budget and max_num_seqs, admits no
    one when it preempted, keeps the pool consistent; FCFS victims go back to the queue's head in
    admission order; every request ends with all its tokens."""
    setup = tiny_setup(budget=case["budget"], seqs=case["seqs"], cap=case["blocks"] * case["B"])
    setup = setup.replace(kv=Paged(block_size=case["B"], watermark=case["watermark"]),
                          prefix_cache=PrefixCache() if case["caching"] else None)
    s = VllmV1(setup, policy=case["policy"], speculative=case["spec"])
    for a, i, o, p, q in zip(case["arrivals"], case["inputs"], case["outputs"], case["prefixes"],
                             case["priorities"]):
        s.add(a, i, o, p, q)
    for _ in range(5000):
        if s.done():
            break
        try:
            step = s.step()
        except RuntimeError as e:                   # a watermarked head that can never fit
            assert "can never be admitted" in str(e)
            return
        check_pool(s)
        if step is None:
            continue
        assert sum(step.scheduled.values()) <= setup.max_num_batched_tokens
        assert len(s.running) <= setup.max_num_seqs
        assert not (step.preempted and step.admitted)
        if step.preempted and case["policy"] == "fcfs":
            victims = sorted(step.preempted, key=lambda rid: step.preempted.index(rid), reverse=True)
            assert s.waiting_ids()[:len(victims)] == victims
            assert all(s.reqs[v].num_computed == 0 and not s.reqs[v].blocks for v in victims)
    assert s.done()
    assert all(r.generated == r.output_len for r in s.reqs)
    assert s.pool.num_free() == s.pool.num_blocks


def test_bad_input():
    """Clear errors: no paged KV, swap, a host tier, an unknown policy, empty requests."""
    base = tiny_setup(cap=64)
    with pytest.raises(ValueError, match="Setup.kv must be 'paged'"):
        VllmV1(base)
    with pytest.raises(ValueError, match="swap is not V1"):
        VllmV1(base.replace(kv=Paged(preemption="swap", swap_gbs=1.0)))
    with pytest.raises(ValueError, match="no host tier"):
        VllmV1(base.replace(kv="paged", prefix_cache=PrefixCache(host_tokens=64, host_link_gbs=1.0)))
    with pytest.raises(ValueError, match="policy must be one of"):
        VllmV1(base.replace(kv="paged"), policy="sjf")
    with pytest.raises(ValueError, match="input_len and output_len must be >= 1"):
        VllmV1(base.replace(kv="paged")).add(0.0, 0, 1)


@PROFILE
@given(tight_case())
def test_priority_with_equal_priorities_is_fcfs(case):
    """With one priority for all and distinct arrivals the priority queue's order is arrival order,
    and the max-(priority, arrival) victim is running's tail (FCFS keeps running in arrival order:
    victims are readmitted before anyone who arrived after them), never a request already
    scheduled: the two policies give the same run."""
    arrivals = [a + 1e-6 * k for k, a in enumerate(case["arrivals"])]       # distinct
    setup = tiny_setup(budget=case["budget"], seqs=case["seqs"], cap=case["blocks"] * case["B"])
    setup = setup.replace(kv=Paged(block_size=case["B"], watermark=0.0),
                          prefix_cache=PrefixCache() if case["caching"] else None)
    runs = [vllm_run(setup, arrivals, case["inputs"], case["outputs"], case["prefixes"],
                     policy=policy, speculative=case["spec"]) for policy in ("fcfs", "priority")]
    fcfs, prio = runs
    assert [(s.start, s.scheduled, s.preempted) for s in fcfs.steps] == \
        [(s.start, s.scheduled, s.preempted) for s in prio.steps]
    assert [r.finish for r in fcfs.reqs] == [r.finish for r in prio.reqs]
