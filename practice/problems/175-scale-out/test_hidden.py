"""Hidden cases for 175: cold start per weight source (checked against sim.fleet's autoscaler),
shared bandwidth, Little's law (checked against the simulator's TargetOutstanding policy) with exact
multiples, warm spares on both sides of "enough already", invalid inputs and random inputs.
Floats are compared with rtol=1e-9; integers exactly.
"""
import math
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
SOURCES = ["local_nvme", "network_storage", "peer_gpu"]


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


# --- cold_start_s ------------------------------------------------------------------------------

@pytest.mark.parametrize("source", SOURCES)
def test_cold_start_each_source(source):
    got, expected = both("cold_start_s", 70.6e9, source)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("source,init_s", [(s, i) for s in SOURCES for i in (0.0, 45.0)],
                         ids=[f"{s}_init{int(i)}" for s in SOURCES for i in (0.0, 45.0)])
def test_cold_start_matches_simulator(source, init_s):
    from sim.fleet import Autoscaler, cold_start_s
    weight_bytes = 141.1e9
    sim_s = cold_start_s(weight_bytes, source, init_s)
    assert sim_s == Autoscaler(weight_source=source, init_s=init_s).cold_start_s(weight_bytes)
    assert math.isclose(reference.cold_start_s(weight_bytes, source, init_s=init_s), sim_s, rel_tol=1e-12)
    got = call(submission, "cold_start_s")(weight_bytes, source, init_s=init_s)
    check_close(got, sim_s, rtol=RTOL)


def test_cold_start_shared_storage_is_the_limit():
    got, expected = both("cold_start_s", 70.6e9, "network_storage", init_s=60, concurrent=8, shared_gbs=5)
    check_close(got, expected, rtol=RTOL)


def test_cold_start_shared_not_the_limit():
    got, expected = both("cold_start_s", 70.6e9, "local_nvme", concurrent=2, shared_gbs=100)
    check_close(got, expected, rtol=RTOL)


def test_cold_start_shared_exactly_equal():
    # 4 instances sharing 28 GB/s get exactly the NVMe's 7 GB/s each
    got, expected = both("cold_start_s", 14e9, "local_nvme", concurrent=4, shared_gbs=28)
    check_close(got, expected, rtol=RTOL)


def test_cold_start_concurrent_ignored_without_shared():
    got, expected = both("cold_start_s", 16e9, "peer_gpu", concurrent=32)
    check_close(got, expected, rtol=RTOL)


def test_cold_start_shared_default_is_one_loader():
    got, expected = both("cold_start_s", 16e9, "peer_gpu", shared_gbs=20)
    check_close(got, expected, rtol=RTOL)


def test_cold_start_single_loader_shared():
    got, expected = both("cold_start_s", 16e9, "peer_gpu", concurrent=1, shared_gbs=20)
    check_close(got, expected, rtol=RTOL)


# --- desired_instances -------------------------------------------------------------------------

def test_desired_rounds_up():
    got, expected = both("desired_instances", 200, 22.0, 32)
    check_close(got, expected)


def test_desired_exact_multiple():
    got, expected = both("desired_instances", 64, 2.0, 32)
    check_close(got, expected)


def test_desired_just_over_multiple():
    got, expected = both("desired_instances", 64.5, 2.0, 32)
    check_close(got, expected)


def test_desired_tiny_load_is_one():
    got, expected = both("desired_instances", 0.01, 0.5, 64)
    check_close(got, expected)


def test_desired_fractional_target():
    got, expected = both("desired_instances", 3, 1.5, 0.75)
    check_close(got, expected)


DESIRED = [(200.0, 22.0, 32.0), (37.5, 4.2, 8.0), (5000.0, 3.3, 48.0), (0.7, 31.0, 1.5)]


@pytest.mark.parametrize("qps,latency,target", DESIRED, ids=[f"{q}qps_{l}s_{t}" for q, l, t in DESIRED])
def test_desired_matches_simulator_policy(qps, latency, target):
    from sim.fleet.autoscale import Signal, TargetOutstanding
    sim_n = TargetOutstanding(target).desired(Signal(0.0, 1, 0, qps * latency, []))
    assert reference.desired_instances(qps, latency, target) == sim_n
    got = call(submission, "desired_instances")(qps, latency, target)
    check_close(got, sim_n)


# --- scale_out ---------------------------------------------------------------------------------

def test_scale_out_fast_cold_start_needs_fewer_spares():
    got, expected = both("scale_out", 200, 0.5, per_instance_qps=12, instances_now=17, interval_s=30,
                         cold_start_s=12)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_flat_traffic_no_spares():
    got, expected = both("scale_out", 100, 0, per_instance_qps=10, instances_now=12, interval_s=30,
                         cold_start_s=300)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_exactly_enough():
    # 100 + 0.5 x 40 = 120 QPS = exactly 12 instances of 10: no spare
    got, expected = both("scale_out", 100, 0.5, per_instance_qps=10, instances_now=12, interval_s=15,
                         cold_start_s=25)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_one_short():
    got, expected = both("scale_out", 100, 0.5, per_instance_qps=10, instances_now=11, interval_s=15,
                         cold_start_s=25)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_just_over_a_multiple():
    got, expected = both("scale_out", 100, 0.5, per_instance_qps=10, instances_now=12, interval_s=15,
                         cold_start_s=25.5)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_from_zero_instances():
    got, expected = both("scale_out", 3, 0.01, per_instance_qps=2, instances_now=0, interval_s=0,
                         cold_start_s=0)
    check_close(got, expected, rtol=RTOL)


def test_scale_out_integer_inputs_give_float_times():
    got, expected = both("scale_out", 50, 1, per_instance_qps=5, instances_now=3, interval_s=10, cold_start_s=20)
    check_close(got, expected, rtol=RTOL)
    for key in ("lead_s", "qps_at_ready"):
        if not isinstance(got[key], float):
            from judgekit import Mismatch
            raise Mismatch("type", path=f"result[{key!r}]", want="float", got=type(got[key]).__name__)


BAD = [
    ("weight_bytes", "cold_start_s", (0, "local_nvme"), {}),
    ("weight_bytes", "cold_start_s", (float("inf"), "local_nvme"), {}),
    ("weight_bytes", "cold_start_s", (True, "local_nvme"), {}),
    ("source", "cold_start_s", (1e9, "s3"), {}),
    ("source", "cold_start_s", (1e9, "LOCAL_NVME"), {}),
    ("source", "cold_start_s", (1e9, 7.0), {}),
    ("init_s", "cold_start_s", (1e9, "peer_gpu"), dict(init_s=-1)),
    ("init_s", "cold_start_s", (1e9, "peer_gpu"), dict(init_s=float("nan"))),
    ("concurrent", "cold_start_s", (1e9, "peer_gpu"), dict(concurrent=0)),
    ("concurrent", "cold_start_s", (1e9, "peer_gpu"), dict(concurrent=2.0)),
    ("concurrent", "cold_start_s", (1e9, "peer_gpu"), dict(concurrent=0, shared_gbs=10)),
    ("shared_gbs", "cold_start_s", (1e9, "peer_gpu"), dict(shared_gbs=0)),
    ("shared_gbs", "cold_start_s", (1e9, "peer_gpu"), dict(shared_gbs=float("inf"))),
    ("qps", "desired_instances", (0, 1.0, 8), {}),
    ("qps", "desired_instances", (float("nan"), 1.0, 8), {}),
    ("latency_s", "desired_instances", (10, 0, 8), {}),
    ("latency_s", "desired_instances", (10, float("inf"), 8), {}),
    ("target_outstanding", "desired_instances", (10, 1.0, 0), {}),
    ("target_outstanding", "desired_instances", (10, 1.0, -4), {}),
    ("qps_now", "scale_out", (0, 1), dict(per_instance_qps=1, instances_now=1, interval_s=1, cold_start_s=1)),
    ("ramp_qps_per_s", "scale_out", (1, -0.1), dict(per_instance_qps=1, instances_now=1, interval_s=1,
                                                    cold_start_s=1)),
    ("ramp_qps_per_s", "scale_out", (1, float("inf")), dict(per_instance_qps=1, instances_now=1, interval_s=1,
                                                            cold_start_s=1)),
    ("per_instance_qps", "scale_out", (1, 1), dict(per_instance_qps=0, instances_now=1, interval_s=1,
                                                   cold_start_s=1)),
    ("instances_now", "scale_out", (1, 1), dict(per_instance_qps=1, instances_now=-1, interval_s=1,
                                                cold_start_s=1)),
    ("instances_now", "scale_out", (1, 1), dict(per_instance_qps=1, instances_now=3.0, interval_s=1,
                                                cold_start_s=1)),
    ("interval_s", "scale_out", (1, 1), dict(per_instance_qps=1, instances_now=1, interval_s=-1, cold_start_s=1)),
    ("cold_start_s", "scale_out", (1, 1), dict(per_instance_qps=1, instances_now=1, interval_s=1,
                                               cold_start_s=-0.5)),
    ("cold_start_s", "scale_out", (1, 1), dict(per_instance_qps=1, instances_now=1, interval_s=1,
                                               cold_start_s=float("nan"))),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_zero_boundaries():
    got, expected = both("cold_start_s", 1.0, "local_nvme", init_s=0, concurrent=1)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("scale_out", 1e-6, 0, per_instance_qps=1e-6, instances_now=0, interval_s=0, cold_start_s=0)
    check_close(got, expected, rtol=RTOL)


def _random(n, seed=175):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out.append(dict(
            cold=(rng.uniform(1e9, 1.5e12), rng.choice(SOURCES), rng.choice([0.0, rng.uniform(0, 300)]),
                  rng.randint(1, 64), rng.choice([None, rng.uniform(1, 400)])),
            desired=(rng.uniform(0.1, 5000), rng.uniform(0.05, 60), rng.uniform(1, 128)),
            scale=(rng.uniform(1, 2000), rng.uniform(0, 10), dict(per_instance_qps=rng.uniform(0.5, 50),
                                                                 instances_now=rng.randint(0, 200),
                                                                 interval_s=rng.uniform(0, 120),
                                                                 cold_start_s=rng.uniform(0, 900)))))
    return out


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    c = RANDOM[index]
    w, source, init_s, concurrent, shared = c["cold"]
    got, expected = both("cold_start_s", w, source, init_s=init_s, concurrent=concurrent, shared_gbs=shared)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("desired_instances", *c["desired"])
    check_close(got, expected)
    qps, ramp, kwargs = c["scale"]
    got, expected = both("scale_out", qps, ramp, **kwargs)
    check_close(got, expected, rtol=RTOL)
