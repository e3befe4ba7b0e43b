"""sim.fleet against the plain fleet (tests/fleet_plain.py): per-request times, instances, errors and
retries equal bit for bit, for every router, PD fleets, failures and autoscaling; on the Python
fleet (with and without ``quiet_until``) and the compiled fleet (sim/fleet/fast.py) where it applies."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, tiny_setup
from fleet_plain import plain_fleet_run
from sim.fleet import ROUTERS, Autoscaler, Failures, Fleet, run_fleet
from sim.workload import Workload
from test_engine_vs_reference import setups

pytestmark = pytest.mark.usefixtures("engine_path", "quiet_hook")   # both engine paths (conftest.py)


@pytest.fixture(scope="module", params=["every read advances", "quiet_until", "compiled fleet"])
def quiet_hook(request):
    """Each test three times: the Python fleet advancing an instance at every read, the same
    skipping the advances that ``Instance.quiet_until`` says cannot change what the read sees, and
    the compiled fleet (``sim.fleet.fast``, forced on: the fleets it does not take run in Python)."""
    from sim.fleet import fast, worker
    saved = worker._QUIET, fast._mode
    worker._QUIET = request.param != "every read advances"
    fast.use_fast(request.param == "compiled fleet")
    yield request.param
    worker._QUIET = saved[0]
    fast.use_fast(saved[1])


def examples(n):
    """n seeded examples (FLEET_EXAMPLES=N overrides them with N random ones, to hunt further)."""
    hunt = os.environ.get("FLEET_EXAMPLES")
    return settings(max_examples=int(hunt) if hunt else n, derandomize=not hunt, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


GAPS = [0.0, 1e-5, 1e-3, 0.01, 0.05, 0.3]


@st.composite
def workloads(draw, max_len=60, max_n=16, ticks=False):
    """Random arrivals and lengths; with ``ticks``, arrivals on a grid of ticks (ties everywhere)."""
    n = draw(st.integers(1, max_n))
    lengths = st.lists(st.integers(1, max_len // 2), min_size=n, max_size=n)
    gaps = draw(st.lists(st.sampled_from(GAPS_TICKS if ticks else GAPS), min_size=n, max_size=n))
    return Workload("test", tuple(np.cumsum(gaps).tolist()), tuple(draw(lengths)), tuple(draw(lengths)))


GAPS_TICKS = [0.0, TICK, 2 * TICK, 3 * TICK, 8 * TICK]


@st.composite
def tick_setups(draw, max_len=12):
    """The hand-worked timelines' instance (steps last whole ticks): equal times are common."""
    return tiny_setup(kv=draw(st.sampled_from([0, 1])), budget=draw(st.integers(1, 6)),
                      seqs=draw(st.integers(1, 4)), cap=draw(st.integers(2 * max_len, 4 * max_len)))


@st.composite
def setup_and_workload(draw):
    """Either the tick world (small lengths, tiny setup) or random setups and arrivals."""
    if draw(st.booleans()):
        return draw(tick_setups()), draw(workloads(12, 12, ticks=True))
    return draw(setups(60)), draw(workloads())


def assert_same(fleet, w, sessions=None):
    res = run_fleet(fleet, w, sessions=sessions)
    ref = plain_fleet_run(fleet, w, sessions)
    assert res.error.tolist() == ref.error
    assert res.retries.tolist() == ref.retries
    assert res.instance.tolist() == ref.where
    assert res.prefill_instance.tolist() == (ref.where_prefill if fleet.disaggregated else ref.where)
    assert np.array_equal(res.first_token, ref.first_token(), equal_nan=True)
    assert np.array_equal(res.finish, ref.finish(), equal_nan=True)
    assert np.array_equal(res.second_token, ref.second_token(), equal_nan=True)
    done = ~np.isnan(res.finish)
    assert np.array_equal(res.transfer_s[done], np.asarray(ref.transfer)[done], equal_nan=True)
    return res, ref


@examples(60)
@given(sw=setup_and_workload(), instances=st.integers(1, 4), router=st.sampled_from(sorted(ROUTERS)),
       seed=st.integers(0, 9), data=st.data())
def test_colocated_fleets_equal_the_plain_fleet(sw, instances, router, seed, data):
    setup, w = sw
    sessions = data.draw(st.lists(st.integers(0, 3), min_size=len(w), max_size=len(w)))
    assert_same(Fleet.of(setup, instances, router=router, seed=seed), w, sessions)


@st.composite
def links(draw):
    """Random links, or (kv 0 or 1 byte per token) transfers of a few ticks."""
    if draw(st.booleans()):
        return dict(link_gbs=draw(st.sampled_from([1e-9 / TICK, 1e-9 / (2 * TICK)])),
                    link_latency_s=draw(st.sampled_from([0.0, TICK, 3 * TICK])))
    return dict(link_gbs=draw(st.sampled_from([1e-3, 1.0, 50.0])),
                link_latency_s=draw(st.sampled_from([0.0, 1e-3, 0.02])))


@examples(60)
@given(sw=setup_and_workload(), p=st.integers(1, 2), d=st.integers(1, 2), router=st.sampled_from(sorted(ROUTERS)),
       seed=st.integers(0, 9), link=links(), data=st.data())
def test_pd_fleets_equal_the_plain_fleet(sw, p, d, router, seed, link, data):
    setup, w = sw
    dec = setup if data.draw(st.booleans()) else data.draw(tick_setups() if setup.params == 0.5 else setups(60))
    assert_same(Fleet.pd(setup, p, dec, d, router=router, seed=seed, **link), w)


@st.composite
def failures(draw, instances, arrivals):
    """Failures at or just after arrivals (where they change what the gateway sees), and random ones."""
    near = st.tuples(st.sampled_from(arrivals), st.sampled_from([0.0, TICK / 2, TICK, 1e-4, 1e-3, 0.02]))
    at = draw(st.lists(st.tuples(near.map(sum), st.integers(0, instances - 1)), max_size=3))
    mtbf = draw(st.one_of(st.none(), st.floats(0.001, 2 * arrivals[-1] + 0.01)))
    detect = draw(st.sampled_from([0.0, TICK, 4 * TICK, 1e-3, 0.05, 1.0]))
    return Failures(at=at, mtbf_s=mtbf, seed=draw(st.integers(0, 9)), detect_s=detect, retries=draw(st.integers(0, 2)))


@examples(150)
@given(data=st.data(), sw=setup_and_workload(), pd=st.booleans(), router=st.sampled_from(sorted(ROUTERS)),
       seed=st.integers(0, 9))
def test_fleets_with_failures_equal_the_plain_fleet(data, sw, pd, router, seed):
    setup, w = sw
    if pd:
        p, d = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
        f = data.draw(failures(p + d, w.arrival))
        fleet = Fleet.pd(setup, p, setup, d, router=router, seed=seed, failures=f, **data.draw(links()))
    else:
        k = data.draw(st.integers(1, 4))
        fleet = Fleet.of(setup, k, router=router, seed=seed, failures=data.draw(failures(k, w.arrival)))
    assert_same(fleet, w)


@examples(60)
@given(sw=setup_and_workload(), router=st.sampled_from(sorted(ROUTERS)), seed=st.integers(0, 9), data=st.data())
def test_autoscaled_fleets_equal_the_plain_fleet(sw, router, seed, data):
    setup, w = sw
    lo = data.draw(st.integers(1, 2))
    hi = data.draw(st.integers(lo, 4))
    a = Autoscaler(policy=data.draw(st.sampled_from(["outstanding", "queue_time"])),
                   target=data.draw(st.sampled_from([0.5, 1, 3, 1e-3, 0.05])),
                   interval_s=data.draw(st.sampled_from([TICK, 3 * TICK, 1e-3, 0.05])),
                   min_instances=lo, max_instances=hi, init_s=data.draw(st.sampled_from([0.0, 2 * TICK, 0.01])))
    fleet = Fleet.of(setup.replace(weight_bytes=data.draw(st.sampled_from([0, 7e6, 7e7]))),
                     data.draw(st.integers(lo, hi)), router=router, seed=seed, autoscaler=a)
    res, ref = assert_same(fleet, w)
    assert [(r.state, r.ready_s) for r in res.workers] == [(p.state if p.state != "draining" else "removed", p.ready_s)
                                                           for p in ref.workers]


@examples(80)
@given(sw=setup_and_workload(), k=st.integers(1, 3), k_long=st.integers(1, 2), threshold=st.integers(0, 30),
       inner=st.sampled_from(sorted(set(ROUTERS) - {"by_length"})), seed=st.integers(0, 9), data=st.data())
def test_a_long_prompt_pool_equals_the_plain_fleet(sw, k, k_long, threshold, inner, seed, data):
    from sim.fleet import Pool
    from sim.fleet.routers import ByLength
    setup, w = sw
    long_setup = data.draw(tick_setups() if setup.params == 0.5 else setups(60))
    f = data.draw(st.one_of(st.none(), failures(k + k_long, w.arrival)))
    fleet = Fleet.of(setup, k, router=ByLength(threshold=threshold, inner=inner), seed=seed,
                     pools={"long": Pool(long_setup, k_long)}, failures=f)
    res, _ = assert_same(fleet, w)
    pools = np.array([r.pool for r in res.workers])
    served = res.instance >= 0
    long_ones = np.asarray(w.input_len) > threshold
    assert (pools[res.instance[served]] == np.where(long_ones[served], "long", "colocated")).all()


def test_busy_fleets_equal_the_plain_fleet(chapter_like, quiet_hook, monkeypatch):
    """Hundreds of requests on instances that decode for many steps between finishes: with the
    quiet_until hook most reads skip their advance (counted here), and nothing changes."""
    from sim import workload
    from sim.engine import Instance
    from sim.fleet import worker
    w = workload.poisson(60, 400, 300, 100, seed=2)
    calls = {True: 0, False: 0}
    advance = Instance.advance

    def counted(self, until=float("inf")):
        calls[worker._QUIET] += 1
        return advance(self, until)
    monkeypatch.setattr(Instance, "advance", counted)
    hooked = quiet_hook == "quiet_until"
    for router in ("least_requests", "least_kv", "power_of_two", "by_length"):
        assert_same(Fleet.of(chapter_like, 4, router=router), w)
        if hooked:
            monkeypatch.setattr(worker, "_QUIET", False)
            run_fleet(Fleet.of(chapter_like, 4, router=router), w)
            monkeypatch.setattr(worker, "_QUIET", True)
    if hooked:
        assert calls[True] < 0.7 * calls[False]
