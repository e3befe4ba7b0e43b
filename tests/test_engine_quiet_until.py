"""``Instance.quiet_until``'s contract: with nothing more submitted, no figure a gateway reads
changes at any t < T, whether or not the instance is advanced to t first; and hand-worked values."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import TICK, tiny_setup
from sim import Setup
from sim.engine import Instance
from sim.kv import Paged
from sim.speculative import Speculative
from test_engine_vs_reference import setups

pytestmark = pytest.mark.usefixtures("engine_path")   # compiled and Python paths (conftest.py)


def figures(inst, t):
    """Everything a gateway reads at time t."""
    return (inst.outstanding(t), inst.running_at(t), inst.queue_len(), inst.free_kv_tokens(t),
            inst.cached_prefix_tokens(None, 10), inst.unfinished_at(t))


def check_quiet(inst, t0, slices=40):
    """After advance(t0): the figures at times in [t0, T) read without advancing equal those read
    after advancing to each of them in turn (small slices, up to the float just below T).
    Returns (T, the last time advanced to)."""
    T = inst.quiet_until()
    assert not math.isnan(T)
    if not T > t0:
        return T, t0
    times = [t0 + (T - t0) * i / slices for i in range(slices)] + [math.nextafter(T, -math.inf)]
    times = sorted(set(t for t in times if t0 <= t < T))
    before = [figures(inst, t) for t in times]     # the state as it is: nothing advanced
    for t, expected in zip(times, before):
        inst.advance(t)
        assert figures(inst, t) == expected, (t, T)
    return T, times[-1]


@st.composite
def driven(draw):
    """A random setup, 1-16 requests submitted up front (some arriving later), and a time to advance to."""
    if draw(st.booleans()):
        setup = tiny_setup(kv=draw(st.sampled_from([0, 1])), budget=draw(st.integers(1, 8)),
                           seqs=draw(st.integers(1, 4)), cap=draw(st.integers(24, 60)))
        gap = st.sampled_from([0.0, TICK, 2 * TICK, 5 * TICK])
    else:
        setup = draw(setups(24))
        gap = st.sampled_from([0.0, 1e-5, 1e-3, 0.01, 0.05])
    n = draw(st.integers(1, 16))
    lengths = st.lists(st.integers(1, 12), min_size=n, max_size=n)
    arrivals = np.cumsum(draw(st.lists(gap, min_size=n, max_size=n))).tolist()
    t0 = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5])) * (arrivals[-1] + 20 * setup.step_time(8, 100))
    return setup, arrivals, draw(lengths), draw(lengths), t0


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=driven(), cuts=st.integers(1, 4))
def test_no_figure_changes_before_quiet_until(case, cuts):
    setup, arrivals, inputs, outputs, t0 = case
    inst = Instance(setup)
    inst.submit_many(arrivals, inputs, outputs)
    last = 0.0
    for j in range(1, cuts + 1):                     # a few reads (nondecreasing), each checked up to its T
        t = max(last, t0 * j / cuts)
        inst.advance(t)
        last = check_quiet(inst, t)[1]


def test_quiet_until_skips_advances_somewhere():
    """The contract test above is not vacuous: a decoding instance answers a time past now."""
    inst = Instance(tiny_setup(budget=6))
    inst.submit_many([0.0] * 3, [2, 2, 2], [6, 9, 12])
    inst.advance(TICK)
    assert inst.quiet_until() > inst.now


def test_hand_worked_quiet_until():
    """tiny_setup(kv=0): a step lasts max(tokens, 2) ticks. A (2 prompt, 5 output) and B (2, 9) at 0:
    step 0 prefills both (4 tokens, 4 ticks); A's last token ends step 4, B's step 8.
    After step 0 (now 4 ticks): root = 4, q = 3, each step at least 2 ticks, so T = 4 + 3 x 2 = 10
    ticks, while A finishes at 12 ticks. After step 4 (now 12 ticks): root = 8, step 5, T = 18 ticks
    (B finishes at 20)."""
    inst = Instance(tiny_setup())
    inst.submit_many([0.0, 0.0], [2, 2], [5, 9])
    inst.advance(TICK)
    assert (inst.now, inst.step) == (4 * TICK, 1)
    assert inst.quiet_until() == 10 * TICK
    assert check_quiet(inst, 4 * TICK)[0] == 10 * TICK
    inst.advance(11 * TICK)                         # step 4 starts at 10 ticks: A finishes at 12
    assert inst.now == 12 * TICK and inst.fin[0] == 12 * TICK
    assert inst.quiet_until() == 18 * TICK
    inst.advance(19 * TICK)
    assert inst.fin[1] == 20 * TICK
    assert inst.quiet_until() == inst.now            # idle: nothing to promise


@pytest.mark.parametrize("seqs, blocked", [(2, True), (3, False)])
def test_a_waiting_request_blocked_until_a_finish(seqs, blocked):
    """The same A and B, and C (2, 3) arriving at 3 ticks: with two seats C waits for A's finish,
    so the promise of 10 ticks stands (A finishes at 12); with three seats C is admitted at step 1
    (4 ticks: 4 tokens, then 3 ticks per step of 3 decoders), the answer is now, and A finishes at
    4 + 4 + 3 + 3 + 2 = 16 ticks."""
    inst = Instance(tiny_setup(seqs=seqs))
    inst.submit_many([0.0, 0.0, 3 * TICK], [2, 2, 2], [5, 9, 3])
    inst.advance(TICK)
    assert inst.now == 4 * TICK
    assert inst.quiet_until() == (10 * TICK if blocked else inst.now)
    check_quiet(inst, TICK)
    inst.advance()
    assert inst.fin[0] == (12 * TICK if blocked else 16 * TICK)


def test_a_prompt_in_progress_promises_nothing():
    inst = Instance(tiny_setup(budget=2))
    inst.submit_many([0.0, 0.0], [2, 6], [5, 9])     # B's prompt takes three steps of budget 2
    inst.advance(TICK)
    assert inst.quiet_until() == inst.now


@pytest.mark.parametrize("feature", ["paged", "speculative"])
def test_other_rules_answer_now(feature):
    extra = dict(kv=Paged(block_size=4)) if feature == "paged" else dict(speculative=Speculative(k=2))
    setup = Setup(params=0.5, weight_bytes=2, kv_bytes_per_token=0, kv_capacity_tokens=1000,
                  peak_flops=1024, bandwidth=1024, mfu=1.0, step_overhead=0.0,
                  max_num_batched_tokens=4, max_num_seqs=8, **extra)
    inst = Instance(setup)
    inst.submit_many([0.0, 0.0], [2, 2], [5, 9])
    inst.advance(TICK)
    assert inst.decoders == 2
    assert inst.quiet_until() == inst.now


@settings(max_examples=60, derandomize=True, deadline=None)
@given(setup=setups(24))
def test_the_promise_is_q_steps_of_step_time(setup):
    """Any setup with a budget of 4 and two seats: A (2, 5) and B (2, 9) at 0 both prefill in step 0,
    A finishes at the end of step 4, so after step 0 T = now + 3 x step_time(2, context, 0, 2) exactly
    (the method writes step_time out; this checks it is the same number)."""
    assume(setup.max_num_batched_tokens >= 4 and setup.max_num_seqs >= 2)
    inst = Instance(setup)
    inst.submit_many([0.0, 0.0], [2, 2], [5, 9])
    inst.advance(math.nextafter(0.0, 1.0))
    assert (inst.step, inst.decoders, inst.running) == (1, 2, 2)
    assert inst.quiet_until() == inst.now + 3 * setup.step_time(2, inst.context, 0, 2)
