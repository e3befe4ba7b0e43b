"""The fast engine against the plain loop (tests/reference.py) on random setups and workloads.

The engine does the same float operations in the same order as the plain loop, so per-request
times must be equal bit for bit, not merely close. Every test runs twice: with the engine's loops
compiled (numba, when installed: the handbook rule's event loop and the quiet-run loop) and on the
pure-Python path (the Python event loop, quiet runs in plain loops and numpy).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reference import poisson_arrivals, reference_run
from sim import Setup, simulate
from sim import _compiled, engine
from sim.engine import VECTOR_MIN_STEPS, run_requests

PROFILE = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# comm_curve: a measured table's shape (a dip, fractional knots, the last segment continued past the
# budget) and one that is 0 below its first knot
CURVES = [None, None, ((0.5, 2e-4), (1.0, 1.9e-4), (3.0, 3e-4), (8.5, 9e-4), (20.0, 1.5e-3)),
          ((2.0, 0.0), (4.0, 1e-3))]


pytestmark = pytest.mark.usefixtures("engine_path")     # every test on both paths (conftest.py)


@st.composite
def setups(draw, max_len):
    budget = draw(st.integers(1, 64))
    return Setup(
        params=draw(st.floats(1e6, 1e11)),
        weight_bytes=draw(st.floats(0, 1e11)),
        kv_bytes_per_token=draw(st.sampled_from([0, 1, 4096, 163840, 327680.5])),
        kv_capacity_tokens=draw(st.integers(2 * max_len, 40 * max_len)),   # KV-bound at the low end
        peak_flops=draw(st.floats(1e12, 1e16)),
        bandwidth=draw(st.floats(1e11, 1e14)),
        mfu=draw(st.floats(0.05, 1.0)),
        step_overhead=draw(st.sampled_from([0.0, 1e-4, 1.5e-3])),
        max_num_batched_tokens=budget,
        max_num_seqs=draw(st.integers(1, 12)),
        # the calibrated step model's terms (0 / 1 in the handbook's rule)
        comm_s_per_token=draw(st.sampled_from([0.0, 0.0, 3.7e-7])),
        kv_serial=draw(st.sampled_from([0.0, 0.0, 0.3, 1.0])),
        kv_bandwidth_ratio=draw(st.sampled_from([1.0, 1.0, 0.61])),
        attn_flops_per_pair=draw(st.sampled_from([0.0, 0.0, 5.2e6])),
        roofline_p=draw(st.sampled_from([0.0, 0.0, 2.0, 4.0, 8.0])),
        host_s_per_seq=draw(st.sampled_from([0.0, 0.0, 2.5e-5])),
        comm_curve=draw(st.sampled_from(CURVES)),
    )


@st.composite
def setup_and_lengths(draw, max_len):
    """A setup and 1-20 requests with per-request prompt and output lengths up to max_len / 2."""
    setup = draw(setups(max_len))
    n = draw(st.integers(1, 20))
    lengths = st.lists(st.integers(1, max_len // 2), min_size=n, max_size=n)
    return setup, n, draw(lengths), draw(lengths)


def assert_same(setup, arrivals, inputs, outputs, closed_loop=None):
    if closed_loop is None:
        res = run_requests(setup, arrivals, inputs, outputs)
    else:
        res = run_requests(setup, None, inputs, outputs, concurrency=closed_loop[0], think_s=closed_loop[1])
    ref = reference_run(setup, arrivals, inputs, outputs, closed_loop=closed_loop)
    assert np.array_equal(res.arrival, [r.arrival for r in ref])
    assert np.array_equal(res.first_token, [r.first_token for r in ref])
    assert np.array_equal(res.finish, [r.finish for r in ref])

    # Every gap between two tokens of a request is one step's duration, once per decoding request.
    gaps = np.sort(np.concatenate([np.diff(r.token_times) for r in ref] + [np.zeros(0)]))
    steps = res.steps
    logged = np.sort(np.repeat(steps.duration, steps.decoders))
    assert len(gaps) == len(logged)
    np.testing.assert_allclose(logged, gaps, rtol=1e-9, atol=1e-12)
    # The budget holds, decoders included, and each step starts when the last ends (or later, idle).
    assert (steps.tokens <= setup.max_num_batched_tokens).all()
    assert (steps.decoders <= setup.max_num_batched_tokens).all()
    assert (steps.start[1:] >= steps.start[:-1] + steps.duration[:-1]).all()
    return res


@PROFILE
@given(data=st.data())
def test_fixed_lengths_poisson(data):
    max_len = 80
    setup = data.draw(setups(max_len))
    n = data.draw(st.integers(1, 25))
    inp = data.draw(st.integers(1, max_len // 2))
    out = data.draw(st.integers(1, max_len // 2))
    # rates from a trickle (idle jumps) to a flood (everything queued), relative to one step's time
    step = setup.step_time(setup.max_num_batched_tokens, 0)
    rate = data.draw(st.floats(1e-3, 1e3)) / step
    seed = data.draw(st.integers(0, 2**16))
    res = simulate(setup, rate, n, inp, out, seed)
    ref = reference_run(setup, poisson_arrivals(rate, n, seed), [inp] * n, [out] * n)
    assert np.array_equal(res.first_token, [r.first_token for r in ref])
    assert np.array_equal(res.finish, [r.finish for r in ref])


@PROFILE
@given(data=st.data())
def test_per_request_lengths(data):
    setup, n, inputs, outputs = data.draw(setup_and_lengths(120))
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1e-5, 1e-3, 0.05, 1.0, 30.0]), min_size=n, max_size=n))
    arrivals = np.cumsum(gaps).tolist()
    assert_same(setup, arrivals, inputs, outputs)


@PROFILE
@given(data=st.data())
def test_closed_loop(data):
    setup, n, inputs, outputs = data.draw(setup_and_lengths(100))
    concurrency = data.draw(st.integers(1, 6))
    think = data.draw(st.sampled_from([0.0, 1e-4, 0.01, 1.0]))
    assert_same(setup, None, inputs, outputs, closed_loop=(concurrency, think))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_long_quiet_runs_take_the_vectorized_path(data):
    # Long outputs and sparse arrivals: quiet runs far longer than VECTOR_MIN_STEPS, cut by arrivals.
    setup = data.draw(setups(2000))
    n = data.draw(st.integers(1, 6))
    outputs = data.draw(st.lists(st.integers(VECTOR_MIN_STEPS, 6 * VECTOR_MIN_STEPS), min_size=n, max_size=n))
    inputs = data.draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    step = setup.step_time(1, 0)
    spacing = data.draw(st.floats(1, 200)) * step
    arrivals = [i * spacing for i in range(n)]
    assume(setup.kv_capacity_tokens >= max(i + o for i, o in zip(inputs, outputs)))
    assert_same(setup, arrivals, inputs, outputs)


def test_named_edge_cases():
    base = dict(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, peak_flops=989e12,
                bandwidth=3.35e12, mfu=0.5, step_overhead=0.5e-3)
    cases = {
        "kv_bound": (Setup(**base, kv_capacity_tokens=600, max_num_batched_tokens=512, max_num_seqs=64), 40, 100, 50),
        "max_num_seqs_bound": (Setup(**base, kv_capacity_tokens=10**6, max_num_batched_tokens=512, max_num_seqs=2), 40, 100, 50),
        "prompt_longer_than_budget": (Setup(**base, kv_capacity_tokens=10**6, max_num_batched_tokens=64, max_num_seqs=16), 40, 300, 20),
        "one_token_prompt_and_output": (Setup(**base, kv_capacity_tokens=10**6, max_num_batched_tokens=64, max_num_seqs=16), 40, 1, 1),
        "budget_of_one": (Setup(**base, kv_capacity_tokens=10**6, max_num_batched_tokens=1, max_num_seqs=16), 15, 5, 5),
    }
    for name, (setup, n, inp, out) in cases.items():
        for rate in (0.01, 5.0, 1e6):
            res = simulate(setup, rate, n, inp, out, seed=7)
            ref = reference_run(setup, poisson_arrivals(rate, n, 7), [inp] * n, [out] * n)
            assert np.array_equal(res.finish, [r.finish for r in ref]), (name, rate)
            assert np.array_equal(res.first_token, [r.first_token for r in ref]), (name, rate)


def test_compiled_loop_grows_and_flushes_its_buffers(monkeypatch):
    # Hundreds of running requests and a step log longer than the compiled loop's buffers: it returns
    # to Python to grow and flush them mid-run, and still gives the plain loop's times (and steps).
    monkeypatch.setattr(_compiled, "LOG_CAP", 16)
    setup = Setup(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, kv_capacity_tokens=10**6,
                  max_num_batched_tokens=4096, max_num_seqs=300)
    n = 400
    inputs = [1 + (7 * i) % 50 for i in range(n)]
    outputs = [1 + (13 * i) % 90 for i in range(n)]
    assert_same(setup, poisson_arrivals(3000.0, n, 3), inputs, outputs)
    assert_same(setup, None, inputs, outputs, closed_loop=(250, 1e-3))


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 9), st.integers(0, 50)), max_size=60))
def test_the_compiled_loops_finish_heap_is_heapq(ops):
    # the compiled loop's finish heap (_compiled._heap_push / _heap_pop, run here in Python) pops the
    # (step, request) pairs in heapq's order
    import heapq
    steps, rs, n, ref = np.zeros(64, dtype=np.int64), np.zeros(64, dtype=np.int64), 0, []
    for push, step, r in ops:
        if push or not ref:
            if (step, r) in ref:
                continue
            heapq.heappush(ref, (step, r))
            n = _compiled._heap_push(steps, rs, n, step, r)
        else:
            assert (steps[0], rs[0]) == heapq.heappop(ref)
            n = _compiled._heap_pop(steps, rs, n)
        assert n == len(ref) and (not ref or (steps[0], rs[0]) == ref[0])
