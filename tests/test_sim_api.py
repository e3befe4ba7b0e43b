"""The public interface: results, summarize's definitions and edge cases, and input errors."""

import math

import numpy as np
import pytest

from sim import Request, Setup, SimResult, percentile, simulate, summarize
from sim.engine import run_requests

BASE = dict(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, kv_capacity_tokens=200_000)


def small():
    return Setup(**BASE)


# ---- results -------------------------------------------------------------------------------

def test_result_arrays_records_and_len():
    res = simulate(small(), 5.0, 20, 300, 40, seed=3)
    assert len(res) == 20
    for name in ("arrival", "first_token", "finish", "input_len", "output_len"):
        assert isinstance(getattr(res, name), np.ndarray) and len(getattr(res, name)) == 20
    records = list(res)
    assert all(isinstance(r, Request) for r in records)
    assert [r.finish for r in records] == res.finish.tolist()
    assert res[3].ttft == res.first_token[3] - res.arrival[3]
    assert np.all(np.diff(res.arrival) >= 0)
    assert np.all(res.arrival < res.first_token) and np.all(res.first_token < res.finish)


def test_seed_fixes_the_arrivals_and_changes_them():
    a = simulate(small(), 5.0, 50, 300, 40, seed=1)
    b = simulate(small(), 5.0, 50, 300, 40, seed=1)
    c = simulate(small(), 5.0, 50, 300, 40, seed=2)
    assert np.array_equal(a.finish, b.finish)
    assert not np.array_equal(a.arrival, c.arrival)


# ---- summarize -----------------------------------------------------------------------------

def hand_result(arrival, first, finish, outputs):
    n = len(arrival)
    return SimResult(arrival, first, finish, [10] * n, outputs)


def test_percentile_is_nearest_rank():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0          # ceil(2.5) - 1 = index 2
    assert percentile(values, 99) == 5.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 1) == 1.0
    assert percentile(values, 20) == 1.0          # ceil(1.0) - 1 = index 0
    assert percentile(values, 21) == 2.0
    # the rank has no float artifact: 99.9% of 1000 values is the 999th
    assert percentile(np.arange(1000.0), 99.9) == 998.0
    # weights count values as if repeated
    assert percentile([1.0, 2.0], 50, weights=[3, 1]) == 1.0
    assert percentile([1.0, 2.0], 80, weights=[3, 1]) == 2.0
    assert percentile([2.0, 1.0, 3.0], 60, weights=[2, 0, 3]) == 3.0
    with pytest.raises(ValueError, match="p must be in"):
        percentile(values, 0)
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_summarize_definitions_on_a_hand_made_result():
    # three requests; the third misses the TTFT SLO, the second misses the TPOT SLO
    res = hand_result(arrival=[0.0, 1.0, 2.0], first=[0.1, 1.2, 3.0], finish=[1.0, 3.2, 3.5],
                      outputs=[10, 5, 1])
    s = summarize(res, ttft_slo=0.5, tpot_slo=0.2)
    assert s["ttft_p50"] == pytest.approx(0.2)
    assert s["ttft_p99"] == pytest.approx(1.0)
    # TPOT: 0.9/9 = 0.1, 2.0/4 = 0.5, and 0.0 for the one-token output
    assert s["tpot_p50"] == pytest.approx(0.1)
    assert s["tpot_p99"] == pytest.approx(0.5)
    assert s["duration_s"] == pytest.approx(3.5)
    assert s["output_tps"] == pytest.approx(16 / 3.5)
    assert s["slo_ok"] == pytest.approx(1 / 3)
    assert s["goodput"] == pytest.approx(1 / 2.0)          # per second of the arrival window, 0 to 2 s
    assert s["itl_p50"] is None                   # built by hand: no step log


def test_slo_boundaries_are_inclusive():
    res = hand_result([0.0], [0.5], [1.5], [3])
    assert summarize(res, 0.5, 0.5)["slo_ok"] == 1.0
    assert summarize(res, 0.4999, 0.5)["slo_ok"] == 0.0


def test_itl_comes_from_the_step_log():
    res = simulate(small(), 2.0, 30, 500, 60, seed=0)
    s = summarize(res, 1.0, 0.1)
    steps = res.steps
    gaps = np.repeat(steps.duration, steps.decoders)
    assert len(gaps) == int((res.output_len - 1).sum())
    assert s["itl_p50"] == percentile(gaps, 50)
    assert s["itl_p99"] == percentile(gaps, 99)
    # TPOT is the mean of a request's gaps, so the largest gap is at least the largest TPOT
    assert gaps.max() >= res.tpot.max()


def test_one_token_outputs_have_zero_tpot_and_itl():
    s = summarize(simulate(small(), 3.0, 10, 100, 1), 1.0, 0.01)
    assert s["tpot_p99"] == 0.0 and s["itl_p99"] == 0.0
    assert s["slo_ok"] == 1.0


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, -math.inf, "2"])
def test_summarize_rejects_bad_slos(bad):
    res = simulate(small(), 3.0, 5, 100, 10)
    with pytest.raises(ValueError, match="ttft_slo"):
        summarize(res, bad, 0.05)
    with pytest.raises(ValueError, match="tpot_slo"):
        summarize(res, 1.0, bad)


# ---- input errors --------------------------------------------------------------------------

@pytest.mark.parametrize("field,value,message", [
    ("params", 0, "params must be > 0"),
    ("peak_flops", -1.0, "peak_flops must be > 0"),
    ("bandwidth", 0.0, "bandwidth must be > 0"),
    ("mfu", 0.0, r"mfu must be in \(0, 1\]"),
    ("mfu", 1.5, r"mfu must be in \(0, 1\]"),
    ("max_num_batched_tokens", 0, "max_num_batched_tokens must be >= 1"),
    ("max_num_seqs", 0, "max_num_seqs must be >= 1"),
    ("kv_capacity_tokens", 0, "kv_capacity_tokens must be >= 1"),
    ("kv_capacity_tokens", 10.5, "kv_capacity_tokens must be a whole number"),
    ("weight_bytes", -1, "weight_bytes must be >= 0"),
    ("step_overhead", -1e-3, "step_overhead must be >= 0"),
    ("params", math.nan, "params must be finite"),
    ("bandwidth", "fast", "bandwidth must be a number"),
])
def test_setup_names_the_bad_field(field, value, message):
    with pytest.raises(ValueError, match=f"Setup.{message}"):
        Setup(**{**BASE, field: value})


@pytest.mark.parametrize("args,message", [
    ((0, 10, 100, 10), "rate must be"),
    ((-2.0, 10, 100, 10), "rate must be"),
    ((math.inf, 10, 100, 10), "rate must be"),
    ((1.0, 0, 100, 10), "num_requests must be a whole number >= 1"),
    ((1.0, 2.5, 100, 10), "num_requests must be a whole number >= 1"),
    ((1.0, 10, 0, 10), "input_len must be a whole number >= 1"),
    ((1.0, 10, 100, 0), "output_len must be a whole number >= 1"),
    ((1.0, 10, 150_000, 60_000), "can never fit"),
])
def test_simulate_names_the_bad_argument(args, message):
    with pytest.raises(ValueError, match=message):
        simulate(small(), *args)


def test_request_exactly_at_capacity_runs():
    setup = Setup(**{**BASE, "kv_capacity_tokens": 110})
    res = simulate(setup, 100.0, 5, 100, 10)
    assert np.all(np.diff(res.first_token) > 0)          # one at a time: each waits for the last


def test_replace_checks_like_a_new_setup():
    s = small().replace(mfu=0.3)
    assert s.mfu == 0.3 and s.params == BASE["params"]
    with pytest.raises(ValueError, match="mfu"):
        small().replace(mfu=2)
    with pytest.raises(ValueError, match="no field"):
        small().replace(gpus=8)


def test_engine_accepts_a_workload_of_one():
    res = run_requests(small(), [0.25], [10], [2])
    assert len(res) == 1 and res.arrival[0] == 0.25
