"""sim.workload and sim.lengths: arrival processes, length distributions, sim.run."""

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from reference import reference_run
from sim import Setup, lengths, simulate, workload
from sim import max_rate

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = Setup(params=1e9, weight_bytes=2e9, kv_bytes_per_token=1e5, kv_capacity_tokens=4000,
              peak_flops=1e14, bandwidth=1e12, max_num_batched_tokens=256, max_num_seqs=8)


def same_times(a, b):
    return (np.array_equal(a.arrival, b.arrival) and np.array_equal(a.first_token, b.first_token)
            and np.array_equal(a.finish, b.finish))


def test_run_poisson_equals_simulate():
    for seed in (0, 7):
        assert same_times(simulate(SMALL, 20.0, 200, 100, 30, seed),
                          sim.run(SMALL, workload.poisson(20.0, 200, 100, 30, seed=seed)))


def test_poisson_is_the_core_stream():
    rng = random.Random(3)
    t, expected = 0.0, []
    for _ in range(50):
        t += rng.expovariate(4.0)
        expected.append(t)
    assert list(workload.poisson(4.0, 50, 10, 10, seed=3).arrival) == expected


def test_lengths_do_not_move_arrivals():
    a = workload.poisson(5.0, 100, 10, 10, seed=1)
    b = workload.poisson(5.0, 100, lengths.uniform(1, 500), lengths.lognormal(200, 1.5), seed=1)
    assert a.arrival == b.arrival and a.input_len != b.input_len


def test_gamma_mean_rate_and_burstiness():
    gaps = np.diff((0.0,) + workload.gamma(10.0, 20000, 1, 1, cv=3.0, seed=2).arrival)
    assert gaps.mean() == pytest.approx(0.1, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)
    smooth = np.diff((0.0,) + workload.gamma(10.0, 20000, 1, 1, cv=0.5, seed=2).arrival)
    assert smooth.std() / smooth.mean() == pytest.approx(0.5, rel=0.05)


def test_uniform_offline_closed_loop_shapes():
    assert workload.uniform(4.0, 3, 1, 1).arrival == (0.25, 0.5, 0.75)
    assert workload.offline(5, 10, 10).arrival == (0.0,) * 5
    w = workload.closed_loop(3, 10, 10, 10, think_s=0.5)
    assert w.arrival is None and w.concurrency == 3 and w.think_s == 0.5 and len(w) == 10


def test_closed_loop_keeps_concurrency_and_think_time():
    res = sim.run(SMALL, workload.closed_loop(4, 40, 50, 20, think_s=0.25))
    # Request i >= 4 is sent think_s after some earlier request finished.
    finishes = np.sort(res.finish)
    for i in range(4, 40):
        assert np.isclose(res.arrival[i] - 0.25, finishes[i - 4])
    # At no time are more than 4 requests in the system.
    for t in res.arrival:
        assert ((res.arrival <= t) & (res.finish > t)).sum() <= 4


def test_seeded_lengths_are_reproducible_and_in_range():
    for dist in (lengths.uniform(5, 9), lengths.normal(50, 30, low=10, high=80),
                 lengths.lognormal(100, 2.0, high=1000), lengths.empirical([3, 30, 300])):
        a = workload.offline(500, dist, 4, seed=11).input_len
        assert a == workload.offline(500, dist, 4, seed=11).input_len
        assert a != workload.offline(500, dist, 4, seed=12).input_len
        assert all(isinstance(x, int) and x >= 1 for x in a)
        assert dist.high is None or max(a) <= dist.high
    assert set(workload.offline(300, lengths.empirical([3, 30, 300]), 1).input_len) == {3, 30, 300}
    assert min(workload.offline(300, lengths.normal(50, 30, low=10, high=80), 1).input_len) >= 10


def test_length_means():
    rng = np.random.default_rng(0)
    for dist, mean in ((lengths.fixed(7), 7), (lengths.uniform(10, 20), 15),
                       (lengths.lognormal(300, 1.0), 300), (lengths.normal(200, 20), 200)):
        assert dist.mean == pytest.approx(mean, rel=0.02)
        assert np.mean(dist.draw(40000, rng)) == pytest.approx(mean, rel=0.03)


@pytest.mark.parametrize("call, field", [
    (lambda: workload.poisson(0, 10, 1, 1), "rate"),
    (lambda: workload.poisson(1, 0, 1, 1), "num_requests"),
    (lambda: workload.poisson(1, 10, 0, 1), "input_len"),
    (lambda: workload.poisson(1, 10, 1, "x"), "output_len"),
    (lambda: workload.gamma(1, 10, 1, 1, cv=0), "cv"),
    (lambda: workload.closed_loop(0, 10, 1, 1), "concurrency"),
    (lambda: workload.closed_loop(1, 10, 1, 1, think_s=-1), "think_s"),
    (lambda: lengths.uniform(10, 5), "uniform high"),
    (lambda: lengths.normal(10, -1), "normal std"),
    (lambda: lengths.lognormal(0, 1), "lognormal mean"),
    (lambda: lengths.empirical([]), "empirical"),
    (lambda: sim.run(SMALL, workload.offline(2, 3000, 1001)), "kv_capacity_tokens"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


# --- trace files ----------------------------------------------------------------------------------

def test_trace_csv_and_jsonl(tmp_path):
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("arrival,input_len,output_len,user\n0.5,100,20,a\n\n1.25,50,7,b\n")
    jsonl_path = tmp_path / "t.jsonl"
    jsonl_path.write_text('{"arrival": 0.5, "input_len": 100, "output_len": 20}\n'
                          '{"arrival": 1.25, "input_len": 50, "output_len": 7}\n')
    for path in (csv_path, jsonl_path):
        w = workload.trace(path)
        assert (w.arrival, w.input_len, w.output_len) == ((0.5, 1.25), (100, 50), (20, 7))
    direct = sim.run(SMALL, workload.trace(csv_path))
    from sim.engine import run_requests
    assert same_times(direct, run_requests(SMALL, [0.5, 1.25], [100, 50], [20, 7]))


@pytest.mark.parametrize("name, text, message", [
    ("a.csv", "arrival,input_len\n0,1\n", "line 1: header lacks column.*output_len"),
    ("a.csv", "arrival,input_len,output_len\n0,1,1\n1,x,1\n", "line 3, column 'input_len': expected a number"),
    ("a.csv", "arrival,input_len,output_len\n0,1,1\n1,2,1.5\n", "line 3, column 'output_len': must be a whole"),
    ("a.csv", "arrival,input_len,output_len\n2,1,1\n1,2,1\n", "line 3, column 'arrival'.*sort"),
    ("a.csv", "arrival,input_len,output_len\n-1,1,1\n", "line 2, column 'arrival'"),
    ("a.csv", "arrival,input_len,output_len\n0,,1\n", "line 2, column 'input_len': missing"),
    ("a.jsonl", '{"arrival": 0, "input_len": 1, "output_len": 1}\n{"arrival": 1,\n', "line 2: not valid JSON"),
    ("a.jsonl", '{"arrival": 0, "input_len": 0, "output_len": 1}\n', "line 1, column 'input_len'"),
    ("a.jsonl", "\n", "no requests"),
    ("a.txt", "x", "unknown format"),
])
def test_trace_errors_name_line_and_column(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        workload.trace(path)


# --- the engine against the plain loop, on the workloads' streams --------------------------------

@st.composite
def small_setups(draw):
    return Setup(params=draw(st.floats(1e6, 1e10)), weight_bytes=draw(st.floats(0, 1e10)),
                 kv_bytes_per_token=draw(st.sampled_from([0, 4096, 163840])),
                 kv_capacity_tokens=draw(st.integers(120, 2000)), peak_flops=draw(st.floats(1e12, 1e15)),
                 bandwidth=draw(st.floats(1e11, 1e13)), mfu=draw(st.floats(0.1, 1.0)),
                 step_overhead=draw(st.sampled_from([0.0, 1e-4, 1.5e-3])),
                 max_num_batched_tokens=draw(st.integers(1, 96)), max_num_seqs=draw(st.integers(1, 10)))


DISTS = st.sampled_from([lengths.uniform(1, 60), lengths.lognormal(20, 1.5, high=60),
                         lengths.empirical([1, 2, 59, 60]), lengths.normal(30, 20, high=60), 17])


def assert_matches_reference(setup, w):
    res = sim.run(setup, w)
    if w.arrival is None:
        ref = reference_run(setup, None, w.input_len, w.output_len, closed_loop=(w.concurrency, w.think_s))
    else:
        ref = reference_run(setup, w.arrival, w.input_len, w.output_len)
    assert np.array_equal(res.arrival, [r.arrival for r in ref])
    assert np.array_equal(res.first_token, [r.first_token for r in ref])
    assert np.array_equal(res.finish, [r.finish for r in ref])


@FAST
@given(setup=small_setups(), inp=DISTS, out=DISTS, n=st.integers(1, 30), seed=st.integers(0, 999),
       kind=st.sampled_from(["poisson", "gamma", "uniform", "offline"]), load=st.floats(0.01, 100))
def test_open_loop_matches_reference(setup, inp, out, n, seed, kind, load):
    rate = load / setup.step_time(setup.max_num_batched_tokens, 0)
    w = {"poisson": lambda: workload.poisson(rate, n, inp, out, seed=seed),
         "gamma": lambda: workload.gamma(rate, n, inp, out, cv=2.5, seed=seed),
         "uniform": lambda: workload.uniform(rate, n, inp, out, seed=seed),
         "offline": lambda: workload.offline(n, inp, out, seed=seed)}[kind]()
    assert_matches_reference(setup, w)


@FAST
@given(setup=small_setups(), inp=DISTS, out=DISTS, n=st.integers(1, 30), seed=st.integers(0, 999),
       concurrency=st.integers(1, 12), think=st.sampled_from([0.0, 1e-4, 0.01, 1.0]))
def test_closed_loop_matches_reference(setup, inp, out, n, seed, concurrency, think):
    assert_matches_reference(setup, workload.closed_loop(concurrency, n, inp, out, think_s=think, seed=seed))


# --- searches over a workload factory ------------------------------------------------------------

def test_rate_searches_on_a_poisson_factory_equal_the_plain_ones():
    factory = lambda r: workload.poisson(r, 300, 100, 30)           # noqa: E731
    args = (0.5, 0.05)
    bisect = dict(method="bisect", lo=1, hi=200)
    assert max_rate(SMALL, factory, *args, **bisect) == max_rate(SMALL, (100, 30), *args, num_requests=300, **bisect)
    assert max_rate(SMALL, factory, *args) == max_rate(SMALL, (100, 30), *args, num_requests=300)


def test_bursts_lower_the_rate():
    args = (0.5, 0.05)
    smooth = max_rate(SMALL, lambda r: workload.uniform(r, 300, 100, 30), *args)
    bursty = max_rate(SMALL, lambda r: workload.gamma(r, 300, 100, 30, cv=4.0), *args)
    assert 0 < bursty < smooth
