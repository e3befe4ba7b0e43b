"""Hidden cases for 165: decode step times below and above the bandwidth saturation point, compute-bound
decode, one SM, all SMs (checked against sim.Setup.step_time), the SLO met exactly (accepted) and missed
by a hair, no split meeting the SLO, random cases vs the reference. SM counts exactly, floats with
rtol=1e-9."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
H100 = {"sms": 132, "peak_flops": 989e12, "bandwidth": 3.35e12, "bw_sat_sms": 44, "mfu": 0.5, "step_overhead": 0.0005}
M8B = {"params": 8e9, "weight_bytes": 16e9, "kv_bytes_per_token": 131072}
M70B_TP8 = {"params": 70e9 / 8, "weight_bytes": 140e9 / 8, "kv_bytes_per_token": 327680 / 8}


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_step_below_and_above_saturation():
    for n in (1, 11, 43, 44, 45, 100):
        check_close(*both("decode_step_s", H100, M8B, n, 64, 64000), rtol=RTOL)


def test_step_compute_bound_with_few_sms():
    check_close(*both("decode_step_s", H100, M8B, 3, 512, 0), rtol=RTOL)


def test_step_saturation_at_one_sm():
    check_close(*both("decode_step_s", dict(H100, bw_sat_sms=1), M8B, 1, 1, 0), rtol=RTOL)


def test_step_saturation_beyond_the_gpu():
    check_close(*both("decode_step_s", dict(H100, bw_sat_sms=200), M8B, 132, 8, 1000), rtol=RTOL)


def test_step_one_sm_gpu():
    g = dict(H100, sms=1, bw_sat_sms=1)
    check_close(*both("decode_step_s", g, M8B, 1, 8, 1000), rtol=RTOL)


def test_split_loose_slo_takes_one_sm():
    check_close(*both("split_sms", H100, M8B, 1, 100, 10.0), rtol=RTOL)


def test_split_examples_by_load():
    for batch, slo in ((16, 0.03), (64, 0.03), (128, 0.015), (256, 0.03), (256, 0.015)):
        check_close(*both("split_sms", H100, M8B, batch, batch * 1000, slo), rtol=RTOL)


def test_split_70b_shard():
    for batch in (8, 64, 128):
        check_close(*both("split_sms", H100, M70B_TP8, batch, batch * 2000, 0.02), rtol=RTOL)


def _dyadic():
    # every quantity a power of two: memory = 2^-6 / min(1, n / 16) s, compute tiny, no overhead
    gpu = {"sms": 64, "peak_flops": 2.0 ** 60, "bandwidth": 2.0 ** 30, "bw_sat_sms": 16, "mfu": 1, "step_overhead": 0.0}
    model = {"params": 1.0, "weight_bytes": 2.0 ** 24, "kv_bytes_per_token": 0}
    return gpu, model


def test_split_slo_met_exactly_is_accepted():
    gpu, model = _dyadic()
    # n = 8: memory = 2^-6 / 0.5 = 2^-5 exactly
    check_close(*both("split_sms", gpu, model, 1, 0, 2.0 ** -5), rtol=RTOL)


def test_split_slo_missed_by_a_hair():
    gpu, model = _dyadic()
    check_close(*both("split_sms", gpu, model, 1, 0, 2.0 ** -5 * (1 - 1e-12)), rtol=RTOL)


def test_split_nothing_fits():
    check_close(*both("split_sms", H100, M8B, 256, 256 * 4000, 0.01), rtol=RTOL)


def test_split_only_the_whole_gpu_fits():
    gpu, model = _dyadic()
    check_close(*both("split_sms", dict(gpu, bw_sat_sms=64), model, 1, 0, 2.0 ** -6), rtol=RTOL)


def _case(rng):
    sms = rng.choice([1, 8, 78, 108, 132, 148])
    gpu = {"sms": sms, "peak_flops": rng.choice([312e12, 989e12, 2250e12]),
           "bandwidth": rng.choice([2.0e12, 3.35e12, 8e12]), "bw_sat_sms": rng.randint(1, sms + 10),
           "mfu": rng.uniform(0.3, 0.8), "step_overhead": rng.choice([0.0, 0.0005, 0.002])}
    model = {"params": rng.choice([1e9, 8e9, 70e9 / 8]), "weight_bytes": rng.choice([2e9, 16e9, 17.5e9]),
             "kv_bytes_per_token": rng.choice([0, 32768, 131072])}
    batch = rng.randint(1, 512)
    return gpu, model, batch, batch * rng.randint(0, 4000), rng.uniform(0.005, 0.08), rng.randint(1, sms)


_rng = random.Random(165)
RANDOM = [_case(_rng) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    gpu, model, batch, context, slo, n = RANDOM[index]
    check_close(*both("split_sms", gpu, model, batch, context, slo), rtol=RTOL)
    check_close(*both("decode_step_s", gpu, model, n, batch, context), rtol=RTOL)


SIM = [c for c in RANDOM if c[0]["bw_sat_sms"] <= c[0]["sms"]][:10]


@pytest.mark.parametrize("index", range(len(SIM)), ids=[f"{i:02d}" for i in range(len(SIM))])
def test_whole_gpu_matches_sim(index):
    gpu, model, batch, context, _, _ = SIM[index]
    got, expected = both("decode_step_s", gpu, model, gpu["sms"], batch, context)
    try:
        from sim import Setup
    except ImportError:
        Setup = None
    if Setup is not None:
        setup = Setup(params=model["params"], weight_bytes=model["weight_bytes"],
                      kv_bytes_per_token=model["kv_bytes_per_token"], kv_capacity_tokens=10**9,
                      peak_flops=gpu["peak_flops"], bandwidth=gpu["bandwidth"], mfu=gpu["mfu"],
                      step_overhead=gpu["step_overhead"])
        if setup.step_time(batch, context) != expected:
            raise RuntimeError("the reference's whole-GPU decode step differs from sim's")
    check_close(got, expected, rtol=RTOL)


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("decode_sms", "decode_step_s", (H100, M8B, 133, 1, 0)),
    ("decode_sms", "decode_step_s", (dict(H100, sms=4), M8B, 5, 1, 0)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
