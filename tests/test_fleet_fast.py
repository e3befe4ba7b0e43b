"""The compiled colocated fleet (sim/fleet/fast.py) against the Python fleet: every field of the
result equal bit for bit, for each router it covers, on both engine paths (compiled kernels, and
the same kernels run as plain Python), with its buffers small enough that every growth path runs.
Its random routers' draws against ``random.Random``'s own; which fleets it takes; and that a small
fleet never loads numba."""

import importlib.util
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import tiny_setup
from sim import _jit, workload
from sim.fleet import Autoscaler, Failures, Fleet, Pool, fast, run_fleet
from sim.fleet.routers import LeastRequests, PowerOfTwo
from sim.fleet.state import RunState
from test_engine_vs_reference import setups
from test_fleet_vs_plain import examples, setup_and_workload

pytestmark = pytest.mark.usefixtures("engine_path")     # compiled kernels, and plain Python ones

COVERED = ["round_robin", "random", "least_requests", "least_kv", "power_of_two"]


def both(fleet, w, sessions=None):
    """The run on the Python fleet and on the compiled fleet (forced on)."""
    saved = fast._mode
    try:
        fast.use_fast(False)
        python = run_fleet(fleet, w, sessions=sessions)
        fast.use_fast(True)
        compiled = run_fleet(fleet, w, sessions=sessions)
    finally:
        fast.use_fast(saved)
    return python, compiled


def assert_identical(a, b):
    for name in ("arrival", "first_token", "finish", "input_len", "output_len", "instance", "prefill_instance",
                 "retries", "transfer_s", "second_token"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.error.tolist() == b.error.tolist()
    assert a.events == b.events and a.timeline == b.timeline and a.end_s == b.end_s
    assert a.workers == b.workers
    assert len(a.instance_results) == len(b.instance_results)
    for x, y in zip(a.instance_results, b.instance_results):
        for name in ("arrival", "first_token", "finish", "input_len", "output_len"):
            assert np.array_equal(getattr(x, name), getattr(y, name), equal_nan=True), name
            assert getattr(x, name).dtype == getattr(y, name).dtype, name
        for name in ("duration", "tokens", "context", "decoders", "pairs", "start", "extra_s", "flags"):
            assert np.array_equal(getattr(x.steps, name), getattr(y.steps, name)), name


@pytest.fixture(scope="module", params=["default buffers", "tiny buffers"])
def buffers(request):
    """Tiny buffers make the loop hand back to Python often: step-log flushes (LOG_FULL), work rows
    doubled (GROW) and request rows doubled (ROOM), each resumed mid-routing."""
    saved = fast.LOG_CAP, fast.WORK_CAP, fast.first_capacity
    if request.param == "tiny buffers":
        fast.LOG_CAP, fast.WORK_CAP, fast.first_capacity = 1, 1, lambda kind, n, k: 1
    yield request.param
    fast.LOG_CAP, fast.WORK_CAP, fast.first_capacity = saved


@examples(80)
@given(sw=setup_and_workload(), instances=st.integers(1, 5), router=st.sampled_from(COVERED),
       seed=st.integers(0, 9), log_routes=st.booleans())
def test_the_compiled_fleet_equals_the_python_fleet(buffers, sw, instances, router, seed, log_routes):
    setup, w = sw
    fleet = Fleet.of(setup, instances, router=router, seed=seed, log_routes=log_routes)
    assert taken(fleet, w)
    assert_identical(*both(fleet, w))


@examples(15)
@given(setup=setups(400), instances=st.integers(2, 24), router=st.sampled_from(COVERED), seed=st.integers(0, 9))
def test_busy_compiled_fleets_equal_the_python_fleet(buffers, setup, instances, router, seed):
    """Hundreds of requests, up to 24 instances (power_of_two's draws switch to its set branch
    above 21)."""
    w = workload.poisson(20 * instances, 300, 200, 100, seed=seed)
    assert_identical(*both(Fleet.of(setup.replace(kv_capacity_tokens=max(setup.kv_capacity_tokens, 400)),
                                    instances, router=router, seed=seed), w))


def test_a_router_object_keeps_its_state(engine_path):
    """A router passed as an object starts from its own state: a round robin's turn, an rng's draws."""
    from sim.fleet.routers import RoundRobin
    rr = RoundRobin()
    rr.turn["colocated"] = 3
    p2 = PowerOfTwo(seed=4)
    p2.rng.random()
    w = workload.poisson(50, 40, 20, 10, seed=1)
    for router in (rr, p2):
        python, compiled = both(Fleet.of(tiny_setup(budget=8, cap=200), 3, router=router), w)
        assert_identical(python, compiled)
    assert both(Fleet.of(tiny_setup(budget=8, cap=200), 3, router=rr), w)[1].instance[0] == 0   # turn 3 of 3


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**40 + 7])
def test_the_written_out_twister_draws_what_random_draws(seed, engine_path):
    rng = random.Random(seed)
    mt = np.array(rng.getstate()[1], dtype=np.int64)
    for _ in range(1500):                                   # past two regenerations of the state
        assert fast._mt_next(mt) == rng.getrandbits(32)
    for n in [1, 2, 3, 5, 7, 16, 17, 31, 32, 33, 1000]:
        for _ in range(20):
            assert fast._randbelow(mt, n) == rng.randrange(n)
    for n in list(range(2, 45)):
        for _ in range(10):
            assert list(fast._sample_pair(mt, n)) == rng.sample(range(n), 2)


def test_draws_that_differ_send_the_fleet_to_python(monkeypatch):
    """If this Python's random drew differently, the check before the run sees it."""
    fleet = Fleet.of(tiny_setup(), 4, router="power_of_two")
    assert taken(fleet, workload.poisson(10, 5, 2, 2))
    for compiled in (True, False):
        kernels = fast._kernel(compiled)
        if kernels is not None:
            monkeypatch.setitem(kernels, "_sample_pair", lambda mt, n: (0, 1))
    assert not taken(fleet, workload.poisson(10, 5, 2, 2))


def _state(fleet, w, compiled):
    st_ = RunState(fleet, w, list(range(len(w))))
    st_.compiled = compiled
    return st_


class Mine(LeastRequests):
    pass


@pytest.mark.parametrize("fleet", [
    Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, router="least_requests"),
    Fleet.of(tiny_setup(), 2, router="least_requests", failures=Failures(at=((0.01, 0),))),
    Fleet.of(tiny_setup(), 2, router="least_requests", autoscaler=Autoscaler(min_instances=1, max_instances=3)),
    Fleet.of(tiny_setup(), 2, router="by_length", pools={"long": Pool(tiny_setup(), 1)}),
    Fleet.of(tiny_setup(), 2, router="prefix_aware"),
    Fleet.of(tiny_setup(), 2, router="session_affinity"),
    Fleet.of(tiny_setup(), 2, router=Mine()),
    Fleet.of(tiny_setup().replace(kv="paged"), 2, router="least_requests"),
], ids=["pd", "failures", "autoscaler", "pools", "prefix_aware", "session_affinity", "subclass", "paged"])
def test_what_the_compiled_fleet_leaves_to_python(fleet):
    assert not taken(fleet, workload.poisson(10, 5, 2, 2))


def taken(fleet, w) -> bool:
    """Whether the compiled fleet, forced on, takes this run."""
    saved = fast._mode
    try:
        fast.use_fast(True)
        return fast.plan(_state(fleet, w, compiled=True)) is not None
    finally:
        fast.use_fast(saved)


def test_auto_takes_only_runs_the_engine_compiles(monkeypatch):
    fleet = Fleet.of(tiny_setup(), 2, router="least_requests")
    w = workload.poisson(10, 5, 2, 2)
    assert fast._mode == "auto"
    assert fast.plan(_state(fleet, w, compiled=False)) is None
    monkeypatch.setattr(fast, "_kernels", {})                   # nothing loaded: a small run stays in Python
    assert fast.plan(_state(fleet, w, compiled=True)) is None
    numba = importlib.util.find_spec("numba") is not None and not _jit.disabled()
    monkeypatch.setattr(fast, "FAST_MIN_REQUESTS", 5)            # large enough: loaded and used
    assert (fast.plan(_state(fleet, w, compiled=True)) is not None) == numba
    monkeypatch.setattr(fast, "FAST_MIN_REQUESTS", 6)            # loaded already: used for any size
    assert (fast.plan(_state(fleet, w, compiled=True)) is not None) == numba
    fast.use_fast(False)
    try:
        assert fast.plan(_state(fleet, w, compiled=True)) is None
    finally:
        fast.use_fast("auto")
    with pytest.raises(ValueError, match="use_fast"):
        fast.use_fast("yes")


def test_a_small_fleet_does_not_load_numba():
    """The chapters' panels run small fleets: they stay on the Python path, start-up stays cheap."""
    code = ("import sys; from sim import presets, workload; from sim.fleet import Fleet, run_fleet; "
            "s = presets.instance('llama-3-70b', 'h100-sxm', tp=8); "
            "run_fleet(Fleet.of(s, 4, router='least_requests'), workload.poisson(40, 2000, 2000, 500)); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("router", COVERED)
def test_every_hand_back_to_python_runs_and_changes_nothing(router, engine_path, monkeypatch):
    """With tiny buffers the loop stops for each reason at least once, and resumes exactly."""
    monkeypatch.setattr(fast, "LOG_CAP", 2)
    monkeypatch.setattr(fast, "WORK_CAP", 1)
    monkeypatch.setattr(fast, "first_capacity", lambda kind, n, k: 1)
    seen = {"_flush": 0, "_grow_work": 0, "_grow_requests": 0}
    for name in seen:
        def counted(self, *args, _name=name, _f=getattr(fast.FastFleet, name)):
            seen[_name] += 1
            return _f(self, *args)
        monkeypatch.setattr(fast.FastFleet, name, counted)
    setup = tiny_setup(budget=6, seqs=8, cap=400)
    w = workload.poisson(3000, 120, 6, 8, seed=3)        # queues build up: uneven shares, many running
    python, compiled = both(Fleet.of(setup, 3, router=router, seed=1), w)
    assert_identical(python, compiled)
    assert seen["_flush"] > 3 and seen["_grow_work"] > 0, seen     # (3 flushes build the results)
    assert seen["_grow_requests"] > 0, seen
