"""Hidden cases for 173: every profile's resources (H100 and H200 totals), one tenant on a slice
with exact fits of memory, TPOT and TTFT on both sides, the choice with ties to the larger profile,
infeasible tenants, invalid inputs and random inputs vs the reference.
Floats: rtol=1e-9; integers, strings and booleans exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
PROFILES = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
T8B = dict(weight_bytes=8e9, kv_bytes_per_token=65536, context=4096, concurrency=8, params=8e9, input_len=2000,
           tpot_ms=50, ttft_ms=1000)
# a slice of 1g.10gb here has exactly 1e10 bytes, 1000 GB/s and 1000 TFLOP/s
EXACT = dict(gpu_memory_gb=80, gpu_bandwidth_gbs=8000, gpu_tflops=7000, mem_util=1.0, mfu=0.5)
FIT = dict(weight_bytes=1e10 - 1000, kv_bytes_per_token=1000, context=1, concurrency=1, params=2.5e11, input_len=1,
           tpot_ms=10.0, ttft_ms=1.0, **EXACT)


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


@pytest.mark.parametrize("profile", PROFILES)
def test_resources_h100(profile):
    got, expected = both("slice_resources", profile)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("profile", ["1g.10gb", "3g.40gb", "7g.80gb"])
def test_resources_h200_totals(profile):
    got, expected = both("slice_resources", profile, gpu_memory_gb=141, gpu_bandwidth_gbs=4800, gpu_tflops=989)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("profile", PROFILES)
def test_serve_each_profile(profile):
    got, expected = both("serve_on_slice", profile, **T8B)
    check_close(got, expected, rtol=RTOL)


def test_serve_everything_exactly_at_its_limit():
    assert reference.serve_on_slice("1g.10gb", **FIT) == {"memory_ok": True, "step_ms": 10.0, "prefill_ms": 1.0,
                                                         "ok": True}
    got, expected = both("serve_on_slice", "1g.10gb", **FIT)
    check_close(got, expected, rtol=RTOL)


def test_serve_one_byte_over_memory():
    got, expected = both("serve_on_slice", "1g.10gb", **dict(FIT, weight_bytes=1e10 - 999))
    check_close(got, expected, rtol=RTOL)


def test_serve_tpot_just_missed():
    got, expected = both("serve_on_slice", "1g.10gb", **dict(FIT, tpot_ms=9.999999))
    check_close(got, expected, rtol=RTOL)


def test_serve_ttft_just_missed():
    got, expected = both("serve_on_slice", "1g.10gb", **dict(FIT, ttft_ms=0.999999))
    check_close(got, expected, rtol=RTOL)


def test_serve_memory_fails_times_still_computed():
    got, expected = both("serve_on_slice", "1g.10gb", **dict(T8B, concurrency=64))
    check_close(got, expected, rtol=RTOL)


def test_serve_default_memory_is_80gb():
    got, expected = both("serve_on_slice", "1g.10gb", **MEM_HAIR)
    check_close(got, expected, rtol=RTOL)


def test_serve_mem_util_applies():
    got, expected = both("serve_on_slice", "1g.20gb", **dict(T8B, mem_util=0.5))
    check_close(got, expected, rtol=RTOL)


SMALL = dict(weight_bytes=1e9, kv_bytes_per_token=1000, context=1, concurrency=1, params=1e9, input_len=1000,
             tpot_ms=1000.0, ttft_ms=10000.0)
_ONE = reference.serve_on_slice("1g.10gb", **SMALL)
# the smallest slice misses TPOT (or TTFT) by a hair at the default GPU figures
TPOT_HAIR = dict(SMALL, tpot_ms=_ONE["step_ms"] * (1 - 1e-4))
TTFT_HAIR = dict(SMALL, ttft_ms=_ONE["prefill_ms"] * (1 - 5e-4))
# 9.05 GB fits in a 1g.10gb slice only if the default 80 GB were larger
MEM_HAIR = dict(SMALL, weight_bytes=9.05e9)

CHOOSE = [
    ("default_bandwidth_misses_tpot_by_a_hair", 7, TPOT_HAIR),
    ("default_tflops_misses_ttft_by_a_hair", 7, TTFT_HAIR),
    ("default_memory_misses_by_a_hair", 7, MEM_HAIR),
    ("one_tenant_ties_to_whole_gpu", 1, T8B),
    ("two_tenants_tie_to_3g", 2, T8B),
    ("three_tenants_tie_to_2g", 3, T8B),
    ("five_tenants", 5, T8B),
    ("tight_ttft_needs_compute", 12, dict(T8B, ttft_ms=300)),
    ("tight_tpot_needs_bandwidth", 12, dict(T8B, tpot_ms=8)),
    ("small_model_fits_smallest", 30, dict(T8B, weight_bytes=1e9, params=1e9, concurrency=2)),
    ("exact_fit_smallest", 7, FIT),
    ("exact_fit_smallest_one_more_tenant", 8, FIT),
    ("just_over_smallest", 7, dict(FIT, weight_bytes=1e10 - 999)),
]


@pytest.mark.parametrize("tenants,tenant", [c[1:] for c in CHOOSE], ids=[c[0] for c in CHOOSE])
def test_choose(tenants, tenant):
    got, expected = both("choose_profile", tenants, **tenant)
    check_close(got, expected, rtol=RTOL)


def test_choose_nothing_fits():
    expect_value_error(call(submission, "choose_profile"), 4, **dict(T8B, weight_bytes=140e9), field="profile")


def test_choose_whole_gpu_too_slow():
    expect_value_error(call(submission, "choose_profile"), 4, **dict(T8B, tpot_ms=1.0), field="profile")


BAD = [
    ("profile", "slice_resources", ("1g.5gb",), {}),
    ("profile", "slice_resources", ("7G.80GB",), {}),
    ("profile", "slice_resources", (None,), {}),
    ("gpu_memory_gb", "slice_resources", ("1g.10gb",), dict(gpu_memory_gb=0)),
    ("gpu_memory_gb", "slice_resources", ("1g.10gb",), dict(gpu_memory_gb=float("inf"))),
    ("gpu_bandwidth_gbs", "slice_resources", ("1g.10gb",), dict(gpu_bandwidth_gbs=-1)),
    ("gpu_tflops", "slice_resources", ("1g.10gb",), dict(gpu_tflops=0)),
    ("gpu_tflops", "slice_resources", ("1g.10gb",), dict(gpu_tflops=True)),
    ("profile", "serve_on_slice", ("8g",), T8B),
    ("weight_bytes", "serve_on_slice", ("1g.20gb",), dict(T8B, weight_bytes=0)),
    ("weight_bytes", "serve_on_slice", ("1g.20gb",), dict(T8B, weight_bytes=float("nan"))),
    ("kv_bytes_per_token", "serve_on_slice", ("1g.20gb",), dict(T8B, kv_bytes_per_token=0)),
    ("context", "serve_on_slice", ("1g.20gb",), dict(T8B, context=0)),
    ("context", "serve_on_slice", ("1g.20gb",), dict(T8B, context=4096.0)),
    ("concurrency", "serve_on_slice", ("1g.20gb",), dict(T8B, concurrency=0)),
    ("concurrency", "serve_on_slice", ("1g.20gb",), dict(T8B, concurrency=True)),
    ("params", "serve_on_slice", ("1g.20gb",), dict(T8B, params=-8e9)),
    ("input_len", "serve_on_slice", ("1g.20gb",), dict(T8B, input_len=0)),
    ("tpot_ms", "serve_on_slice", ("1g.20gb",), dict(T8B, tpot_ms=0)),
    ("tpot_ms", "serve_on_slice", ("1g.20gb",), dict(T8B, tpot_ms=float("inf"))),
    ("ttft_ms", "serve_on_slice", ("1g.20gb",), dict(T8B, ttft_ms=0)),
    ("mfu", "serve_on_slice", ("1g.20gb",), dict(T8B, mfu=0)),
    ("mfu", "serve_on_slice", ("1g.20gb",), dict(T8B, mfu=1.01)),
    ("mem_util", "serve_on_slice", ("1g.20gb",), dict(T8B, mem_util=0)),
    ("mem_util", "serve_on_slice", ("1g.20gb",), dict(T8B, mem_util=1.5)),
    ("tenants", "choose_profile", (0,), T8B),
    ("tenants", "choose_profile", (2.0,), T8B),
    ("gpu_memory_gb", "choose_profile", (2,), dict(T8B, gpu_memory_gb=0)),
    ("mfu", "choose_profile", (2,), dict(T8B, mfu=float("nan"))),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_upper_ends():
    got, expected = both("serve_on_slice", "7g.80gb", **dict(T8B, mfu=1.0, mem_util=1.0, context=1, concurrency=1,
                                                              input_len=1))
    check_close(got, expected, rtol=RTOL)


def _random(n, seed=173):
    rng = random.Random(seed)
    cases = []
    while len(cases) < n:
        params = rng.uniform(0.5e9, 30e9)
        tenant = dict(weight_bytes=params * rng.choice([0.5, 1, 2]), kv_bytes_per_token=rng.choice([16384, 65536,
                                                                                                      131072]),
                      context=rng.randint(256, 32768), concurrency=rng.randint(1, 64), params=params,
                      input_len=rng.randint(16, 8000), tpot_ms=rng.uniform(5, 100), ttft_ms=rng.uniform(50, 3000),
                      mfu=rng.uniform(0.2, 0.7), mem_util=rng.uniform(0.8, 0.95))
        tenants = rng.randint(1, 100)
        try:
            reference.choose_profile(tenants, **tenant)
        except ValueError:
            continue
        cases.append((tenants, tenant))
    return cases


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    tenants, tenant = RANDOM[index]
    got, expected = both("choose_profile", tenants, **tenant)
    check_close(got, expected, rtol=RTOL)
    for profile in ("1g.10gb", "2g.20gb", "4g.40gb"):
        got, expected = both("serve_on_slice", profile, **tenant)
        check_close(got, expected, rtol=RTOL)
