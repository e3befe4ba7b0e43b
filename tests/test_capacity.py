"""sim.capacity: one max_rate over fixed lengths or a workload function, and its argument checks."""

import math

import pytest

from sim import Setup, capacity, max_rate, meets_slo, workload

SMALL = Setup(params=1e9, weight_bytes=2e9, kv_bytes_per_token=1e5, kv_capacity_tokens=4000,
              peak_flops=1e14, bandwidth=1e12, max_num_batched_tokens=256, max_num_seqs=8)
SLOS = (0.5, 0.05)


def test_search_result_is_feasible_and_the_next_step_is_not():
    r = max_rate(SMALL, (100, 30), *SLOS, num_requests=300, rel_tol=0.01)
    assert r > 0
    assert meets_slo(SMALL, (100, 30), r, *SLOS, num_requests=300)
    assert not meets_slo(SMALL, (100, 30), r * 1.01, *SLOS, num_requests=300)


def test_meets_slo_on_a_workload_function_equals_fixed_lengths():
    factory = lambda r: workload.poisson(r, 300, 100, 30, seed=3)          # noqa: E731
    for rate in (1.0, 5.0, 40.0):
        assert meets_slo(SMALL, factory, rate, *SLOS) == meets_slo(SMALL, (100, 30), rate, *SLOS,
                                                                   num_requests=300, seed=3)


def test_target_loosens_the_answer():
    strict = max_rate(SMALL, (100, 30), *SLOS, num_requests=300, target=0.99)
    loose = max_rate(SMALL, (100, 30), *SLOS, num_requests=300, target=0.5)
    assert loose > strict


@pytest.mark.parametrize("kwargs, field", [
    ({"method": "newton"}, "method"),
    ({"load": (100,)}, "load"),
    ({"load": "100x30"}, "load"),
    ({"load": (0, 30)}, "input_len"),
    ({"load": (100, 2.5)}, "output_len"),
    ({"ttft_slo": 0}, "ttft_slo"),
    ({"tpot_slo": math.nan}, "tpot_slo"),
    ({"target": 1.5}, "target"),
    ({"num_requests": 0}, "num_requests"),
    ({"rel_tol": 1.0}, "rel_tol"),
    ({"method": "bisect", "rel_tol": 0.01}, "rel_tol"),
    ({"lo": 1.0}, "lo"),
    ({"iterations": 12}, "iterations"),
    ({"method": "bisect", "lo": 10.0, "hi": 5.0}, "lo"),
    ({"method": "bisect", "iterations": 0}, "iterations"),
    ({"load": lambda r: workload.poisson(r, 300, 100, 30), "num_requests": 300}, "num_requests"),
    ({"load": lambda r: workload.poisson(r, 300, 100, 30), "seed": 1}, "seed"),
])
def test_bad_input_names_the_field(kwargs, field):
    args = dict(setup=SMALL, load=(100, 30), ttft_slo=0.5, tpot_slo=0.05)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        max_rate(**args)


def test_meets_slo_checks_the_rate():
    with pytest.raises(ValueError, match="rate"):
        meets_slo(SMALL, (100, 30), -1.0, *SLOS)


def test_errors_are_value_errors():
    assert issubclass(capacity.BracketError, ValueError) and issubclass(capacity.InfeasibleError, ValueError)
