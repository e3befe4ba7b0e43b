"""Hidden cases for 141: the transfer time (checked against sim.fleet's Link and a small simulated PD
fleet), layer-by-layer overlap on both sides of "link faster than compute", link load, invalid inputs
and random inputs vs the reference. Floats: rtol=1e-9 (exposed_s also atol=1e-9 s); integers exactly.
"""
import math
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
ATOL = 1e-9


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


# --- transfer_s --------------------------------------------------------------------------------

def test_transfer_defaults():
    got, expected = both("transfer_s", 2000, 327680)
    check_close(got, expected, rtol=RTOL)


def test_transfer_one_token_zero_latency():
    got, expected = both("transfer_s", 1, 35136, link_gbs=400, latency_s=0)
    check_close(got, expected, rtol=RTOL)


def test_transfer_slow_ethernet():
    got, expected = both("transfer_s", 32768, 163840, link_gbs=1.25, latency_s=0.02)
    check_close(got, expected, rtol=RTOL)


LINKS = [(2000, 327680.0, 50.0, 1e-3), (1, 35136.0, 400.0, 0.0), (131072, 163840.0, 12.5, 5e-3),
         (777, 70272.0, 3.2, 2.5e-4)]


@pytest.mark.parametrize("tokens,kv,gbs,latency", LINKS, ids=[f"{t}tok_{g}gbs" for t, _, g, _ in LINKS])
def test_transfer_matches_sim_link(tokens, kv, gbs, latency):
    from sim.fleet import Link
    sim_s = Link(gbs, latency).transfer_s(tokens, kv)
    assert math.isclose(reference.transfer_s(tokens, kv, link_gbs=gbs, latency_s=latency), sim_s, rel_tol=1e-12)
    got = call(submission, "transfer_s")(tokens, kv, link_gbs=gbs, latency_s=latency)
    check_close(got, sim_s, rtol=RTOL)


def _simulated_pd_fleet():
    """Each request's transfer time as the simulator recorded it in a small PD fleet."""
    from sim import presets
    from sim import lengths, workload
    from sim.fleet import Fleet, run_fleet
    setup = presets.instance("llama-3-8b", "h100-sxm", tp=1)
    fleet = Fleet.pd(setup, 1, setup, 1, link_gbs=12.5, link_latency_s=2e-3)
    result = run_fleet(fleet, workload.poisson(2.0, 6, lengths.uniform(1, 4096), 10, seed=3))
    return [(int(n), float(setup.kv_bytes_per_token), float(x)) for n, x in zip(result.input_len, result.transfer_s)]


def test_transfer_matches_simulated_pd_fleet():
    for tokens, kv, sim_s in _simulated_pd_fleet():
        assert math.isclose(reference.transfer_s(tokens, kv, link_gbs=12.5, latency_s=2e-3), sim_s, rel_tol=1e-12)
        got = call(submission, "transfer_s")(tokens, kv, link_gbs=12.5, latency_s=2e-3)
        check_close(got, sim_s, rtol=RTOL)


# --- exposed_s ---------------------------------------------------------------------------------

def test_exposed_fast_link_only_last_layer():
    got, expected = both("exposed_s", 8000, 327680, 1.2, 80, link_gbs=12.5)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_exposed_slow_link_most_of_transfer():
    got, expected = both("exposed_s", 8000, 327680, 1.2, 80, link_gbs=1.25)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_exposed_link_exactly_as_fast_as_compute():
    # 4 layers, 1 s of prefill: each layer computes in 0.25 s and sends 1e9 bytes at 4 GB/s = 0.25 s
    got, expected = both("exposed_s", 1000, 4e6, 1.0, 4, link_gbs=4.0, latency_s=0.0)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_exposed_link_slightly_slower_than_compute():
    got, expected = both("exposed_s", 1000, 4.4e6, 1.0, 4, link_gbs=4.0, latency_s=0.0)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_exposed_one_layer_equals_transfer():
    got, expected = both("exposed_s", 3000, 35136, 0.4, 1, link_gbs=25, latency_s=1e-3)
    check_close(got, expected, rtol=RTOL, atol=ATOL)
    check_close(got, reference.transfer_s(3000, 35136, link_gbs=25, latency_s=1e-3), rtol=RTOL, atol=ATOL)


def test_exposed_latency_added_once():
    got, expected = both("exposed_s", 2000, 327680, 0.25, 80, latency_s=0.05)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


def test_exposed_two_layers_slow_first():
    got, expected = both("exposed_s", 100, 1e7, 0.3, 2, link_gbs=2.0, latency_s=0.0)
    check_close(got, expected, rtol=RTOL, atol=ATOL)


# --- link_load ---------------------------------------------------------------------------------

def test_link_load_mla():
    got, expected = both("link_load", 500, 1500, 35136, decode_instances=18, nics_per_instance=8)
    check_close(got, expected, rtol=RTOL)


def test_link_load_overloaded():
    got, expected = both("link_load", 200, 8000, 327680, decode_instances=2, nics_per_instance=1,
                         nic_gbs=25)
    check_close(got, expected, rtol=RTOL)


def test_link_load_smallest():
    got, expected = both("link_load", 0.5, 1, 1, decode_instances=1, nics_per_instance=1, nic_gbs=0.001)
    check_close(got, expected, rtol=RTOL)


GOOD = dict(decode_instances=4, nics_per_instance=8)
BAD = [
    ("input_len", "transfer_s", (0, 1000), {}),
    ("input_len", "transfer_s", (12.0, 1000), {}),
    ("input_len", "transfer_s", (True, 1000), {}),
    ("kv_bytes_per_token", "transfer_s", (10, 0), {}),
    ("kv_bytes_per_token", "transfer_s", (10, float("inf")), {}),
    ("kv_bytes_per_token", "transfer_s", (10, -5), {}),
    ("link_gbs", "transfer_s", (10, 1000), dict(link_gbs=0)),
    ("link_gbs", "transfer_s", (10, 1000), dict(link_gbs=float("nan"))),
    ("latency_s", "transfer_s", (10, 1000), dict(latency_s=-1e-6)),
    ("latency_s", "transfer_s", (10, 1000), dict(latency_s=float("inf"))),
    ("prefill_s", "exposed_s", (10, 1000, 0, 4), {}),
    ("prefill_s", "exposed_s", (10, 1000, float("inf"), 4), {}),
    ("layers", "exposed_s", (10, 1000, 1.0, 0), {}),
    ("layers", "exposed_s", (10, 1000, 1.0, 2.0), {}),
    ("input_len", "exposed_s", (0, 1000, 1.0, 4), {}),
    ("kv_bytes_per_token", "exposed_s", (10, 0, 1.0, 4), {}),
    ("link_gbs", "exposed_s", (10, 1000, 1.0, 4), dict(link_gbs=-1)),
    ("latency_s", "exposed_s", (10, 1000, 1.0, 4), dict(latency_s=-0.001)),
    ("qps", "link_load", (0, 100, 1000), GOOD),
    ("qps", "link_load", (float("nan"), 100, 1000), GOOD),
    ("input_len", "link_load", (1, 0, 1000), GOOD),
    ("kv_bytes_per_token", "link_load", (1, 100, 0), GOOD),
    ("decode_instances", "link_load", (1, 100, 1000), dict(GOOD, decode_instances=0)),
    ("decode_instances", "link_load", (1, 100, 1000), dict(GOOD, decode_instances=1.5)),
    ("nics_per_instance", "link_load", (1, 100, 1000), dict(GOOD, nics_per_instance=0)),
    ("nic_gbs", "link_load", (1, 100, 1000), dict(GOOD, nic_gbs=0)),
    ("nic_gbs", "link_load", (1, 100, 1000), dict(GOOD, nic_gbs=float("inf"))),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _random(n, seed=141):
    rng = random.Random(seed)
    return [dict(input_len=rng.randint(1, 200000), kv=rng.choice([35136, 70272, 131072, 163840, 327680]) *
                 rng.uniform(0.25, 2), prefill_s=rng.uniform(0.005, 30), layers=rng.randint(1, 128),
                 link_gbs=rng.uniform(1, 400), latency_s=rng.choice([0.0, 1e-3, rng.uniform(0, 0.01)]))
            for _ in range(n)]


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    c = RANDOM[index]
    got, expected = both("transfer_s", c["input_len"], c["kv"], link_gbs=c["link_gbs"], latency_s=c["latency_s"])
    check_close(got, expected, rtol=RTOL)
    got, expected = both("exposed_s", c["input_len"], c["kv"], c["prefill_s"], c["layers"], link_gbs=c["link_gbs"],
                         latency_s=c["latency_s"])
    check_close(got, expected, rtol=RTOL, atol=ATOL)
