"""The resumable instance: cut anywhere, it gives the engine's results bit for bit; prefilled
arrivals follow the plain reference; its state is read as of the asking time."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from engine_parity import driven_run
from fleet_reference import plain_instance_run
from sim.engine import Instance, run_requests
from test_engine_vs_reference import setup_and_lengths

pytestmark = pytest.mark.usefixtures("engine_path")     # compiled and pure-Python engine (conftest.py)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def drive(setup, arrivals, inputs, outputs, prefilled=None, cuts=()):
    """Submit each request at its arrival after advancing to it, advancing also to extra cut times."""
    return driven_run(setup, arrivals, inputs, outputs, cuts, prefilled=prefilled)


@FAST
@given(data=st.data())
def test_cut_anywhere_equals_the_engine(data):
    setup, n, inputs, outputs = data.draw(setup_and_lengths(120))
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1e-5, 1e-3, 0.05, 1.0]), min_size=n, max_size=n))
    arrivals = np.cumsum(gaps).tolist()
    cuts = data.draw(st.lists(st.floats(0, arrivals[-1] + 5.0), max_size=30))
    ref = run_requests(setup, arrivals, inputs, outputs)
    res = drive(setup, arrivals, inputs, outputs, cuts=cuts)
    assert np.array_equal(res.first_token, ref.first_token)
    assert np.array_equal(res.finish, ref.finish)
    assert np.array_equal(res.steps.duration, ref.steps.duration)
    assert np.array_equal(res.steps.start, ref.steps.start)


@FAST
@given(data=st.data(), mixed=st.booleans())
def test_prefilled_arrivals_follow_the_plain_reference(data, mixed):
    setup, n, inputs, outputs = data.draw(setup_and_lengths(120))
    outputs = [max(2, o) for o in outputs]
    if any(i + o > setup.kv_capacity_tokens for i, o in zip(inputs, outputs)):
        return
    prefilled = data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) if mixed else [True] * n
    gaps = data.draw(st.lists(st.sampled_from([0.0, 1e-4, 1e-2, 1.0]), min_size=n, max_size=n))
    arrivals = np.cumsum(gaps).tolist()
    res = drive(setup, arrivals, inputs, outputs, prefilled)
    ref = plain_instance_run(setup, arrivals, inputs, outputs, prefilled)
    assert np.array_equal(res.finish, [r.finish for r in ref])
    first = [math.nan if p else r.first_token for p, r in zip(prefilled, ref)]
    assert np.array_equal(res.first_token, first, equal_nan=True)


def test_prefilled_request_decodes_from_its_admission_step():
    # r0 arrives prefilled at 1 tick (prompt 4, output 3): admitted at 1, its first decode step
    # (1 token over context 4 + 1 = 5, kv 1 byte: 2 + 5 = 7 ticks) gives token 2 at 8, the next
    # (context 6: 8 ticks) token 3 at 16.
    res = drive(tiny_setup(kv=1), [TICK], [4], [3], [True])
    assert ticks(res.finish) == [16]
    assert res.steps.tokens.tolist() == [1, 1]
    assert res.steps.context.tolist() == [5, 6]
    assert res.steps.decoders.tolist() == [1, 1]


def test_state_is_read_as_of_the_asking_time():
    # r0 (prompt 2, output 1) arrives at 0: one step 0 -> 2 ticks. Advanced to 1 tick, the step has
    # run (steps are committed whole) but at t = 1 tick the request is still outstanding.
    inst = Instance(tiny_setup(cap=100))
    inst.submit(0.0, 2, 1)
    inst.advance(TICK)
    assert inst.now == 2 * TICK
    assert inst.outstanding(TICK) == 1 and inst.running_at(TICK) == 1
    assert inst.free_kv_tokens(TICK) == 97
    assert inst.outstanding(2 * TICK) == 0 and inst.free_kv_tokens(2 * TICK) == 100
    assert inst.next_time() == math.inf
    inst.submit(5 * TICK, 2, 1)
    assert inst.queue_len() == 1 and inst.next_time() == 5 * TICK


def test_submissions_must_not_go_back_in_time():
    inst = Instance(tiny_setup())
    inst.submit(1.0, 2, 2)
    try:
        inst.submit(0.5, 2, 2)
    except ValueError as e:
        assert "arrival" in str(e)
    else:
        raise AssertionError("expected ValueError")
