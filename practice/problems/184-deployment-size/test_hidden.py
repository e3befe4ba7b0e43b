"""Hidden cases for 184: edge cases, infeasible and invalid inputs, random inputs vs the reference.

Floats are compared with rtol=1e-9; integers and strings exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9

H100_70B = dict(params=70e9, weight_bytes=140e9, kv_bytes_per_token=327680, gpus_per_instance=8,
                gpu_mem_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989)


def both(name, *args, **kwargs):
    """(learner's result, reference result) of the same call."""
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def test_kv_exact_fit():
    got, expected = both("max_batch_by_kv", 1000, 10, 10)
    check_close(got, expected)


def test_kv_budget_not_positive():
    for budget in (0, -5e9):
        got, expected = both("max_batch_by_kv", budget, 327680, 2250)
        check_close(got, expected)


def test_kv_fractional_context():
    got, expected = both("max_batch_by_kv", 404e9, 163840, 2250.5)
    check_close(got, expected)


def test_kv_small_values_are_valid():
    got, expected = both("max_batch_by_kv", 1, 0.5, 0.5)
    check_close(got, expected)


def test_step_fractional_context():
    got, expected = both("decode_step_ms", 3, 0.5, weight_bytes=0.5, kv_bytes_per_token=0.25,
                         bandwidth_gbs=0.5)
    check_close(got, expected, rtol=RTOL)


def test_prefill_rps_default_mfu():
    got, expected = both("prefill_rps", 1, params=0.5, gpus_per_instance=1, gpu_tflops=0.5)
    check_close(got, expected, rtol=RTOL)


ONE_SEQUENCE = dict(params=1e9, weight_bytes=78.5e9, kv_bytes_per_token=1e6, gpus_per_instance=1,
                    gpu_mem_gb=80, gpu_bandwidth_gbs=3350, gpu_tflops=989, mem_util=1.0, reserve_gb=0.0)


def test_exactly_one_sequence_fits_memory():
    # budget 1.5 GB, one sequence of 1001 tokens x 1 MB: kv batch 1
    got, expected = both("plan", 5, 1000, 2, 50, **ONE_SEQUENCE)
    check_close(got, expected, rtol=RTOL)


def test_memory_and_tpot_both_allow_one():
    # step(1) = 23.73 ms, step(2) = 24.03 ms: a TPOT of 23.9 ms allows exactly 1, as does memory
    got, expected = both("plan", 5, 1000, 2, 23.9, **ONE_SEQUENCE)
    check_close(got, expected, rtol=RTOL)


def test_tpot_allows_exactly_one():
    got, expected = both("plan", 5, 1000, 2, 23.9, **dict(ONE_SEQUENCE, weight_bytes=70e9))
    check_close(got, expected, rtol=RTOL)


def test_memory_just_short_of_two_sequences():
    # budget = 2 x 1.001 GB - 1 byte: one sequence, not two
    got, expected = both("plan", 5, 1000, 2, 50, **dict(ONE_SEQUENCE, weight_bytes=77.998e9 + 1))
    check_close(got, expected, rtol=RTOL)


def test_memory_exactly_two_sequences_with_reserve():
    got, expected = both("plan", 5, 1000, 2, 50, **dict(ONE_SEQUENCE, weight_bytes=76.998e9, reserve_gb=1.0))
    check_close(got, expected, rtol=RTOL)


def _tpot_just_short(k):
    """A TPOT a hair (1e-7 of a sequence's read) short of fitting k sequences."""
    cfg = dict(ONE_SEQUENCE, weight_bytes=10e9, kv_bytes_per_token=1e5)
    avg = 1000 + 2 / 2
    bw = cfg["gpus_per_instance"] * cfg["gpu_bandwidth_gbs"]
    step0 = reference.decode_step_ms(0, avg, weight_bytes=cfg["weight_bytes"],
                                     kv_bytes_per_token=cfg["kv_bytes_per_token"], bandwidth_gbs=bw)
    per_seq = avg * cfg["kv_bytes_per_token"] / (bw * 1e9) * 1e3
    return step0 + (k - 1e-7) * per_seq, cfg


def test_tpot_just_short_of_a_batch():
    tpot, cfg = _tpot_just_short(40)
    got, expected = both("plan", 5, 1000, 2, tpot, **cfg)
    check_close(got, expected, rtol=RTOL)


def test_step_weights_only():
    got, expected = both("decode_step_ms", 0, 2250, weight_bytes=70e9, kv_bytes_per_token=163840,
                         bandwidth_gbs=8 * 3350)
    check_close(got, expected, rtol=RTOL)


def test_step_with_overhead():
    got, expected = both("decode_step_ms", 128, 4096, weight_bytes=16e9, kv_bytes_per_token=131072,
                         bandwidth_gbs=2039, overhead_ms=1.5)
    check_close(got, expected, rtol=RTOL)


def test_prefill_rps_single_gpu():
    got, expected = both("prefill_rps", 512, params=8e9, gpus_per_instance=1, gpu_tflops=312, mfu=0.5)
    check_close(got, expected, rtol=RTOL)


def test_tpot_bound():
    got, expected = both("plan", 200, 2000, 500, 12, **H100_70B)
    check_close(got, expected, rtol=RTOL)


def test_overhead_counts():
    got, expected = both("plan", 200, 2000, 500, 20, overhead_ms=1.5, **H100_70B)
    check_close(got, expected, rtol=RTOL)


def test_headroom_one():
    got, expected = both("plan", 37.5, 1024, 256, 40, headroom=1.0, mfu=0.55, **H100_70B)
    check_close(got, expected, rtol=RTOL)


def test_fp8_single_gpu():
    got, expected = both("plan", 12, 800, 300, 30, params=8e9, weight_bytes=8e9,
                         kv_bytes_per_token=65536, gpus_per_instance=1, gpu_mem_gb=80,
                         gpu_bandwidth_gbs=3350, gpu_tflops=1979, reserve_gb=2.0)
    check_close(got, expected, rtol=RTOL)


def test_long_output_odd_length():
    got, expected = both("plan", 3, 31, 4097, 25, mem_util=0.95, **H100_70B)
    check_close(got, expected, rtol=RTOL)


def test_infeasible_weights_do_not_fit():
    cfg = dict(H100_70B, gpus_per_instance=2)
    expect_value_error(call(submission, "plan"), 200, 2000, 500, 50, field="gpu_mem_gb", **cfg)


def test_infeasible_tpot():
    expect_value_error(call(submission, "plan"), 200, 2000, 500, 5, field="tpot_ms", **H100_70B)


def test_infeasible_both_reports_memory():
    cfg = dict(H100_70B, gpus_per_instance=2)
    expect_value_error(call(submission, "plan"), 200, 2000, 500, 5, field="gpu_mem_gb", **cfg)


BAD_PLAN = [
    ("qps", dict(qps=0)),
    ("qps", dict(qps=-3)),
    ("input_len", dict(input_len=0)),
    ("output_len", dict(output_len=-1)),
    ("tpot_ms", dict(tpot_ms=0)),
    ("mfu", dict(mfu=1.5)),
    ("mfu", dict(mfu=0)),
    ("mem_util", dict(mem_util=1.2)),
    ("headroom", dict(headroom=0)),
    ("headroom", dict(headroom=0.7)),
    ("reserve_gb", dict(reserve_gb=-1)),
    ("overhead_ms", dict(overhead_ms=-0.5)),
    ("gpus_per_instance", dict(gpus_per_instance=0)),
    ("gpu_bandwidth_gbs", dict(gpu_bandwidth_gbs=0)),
    ("gpu_tflops", dict(gpu_tflops=-989)),
    ("params", dict(params=0)),
    ("kv_bytes_per_token", dict(kv_bytes_per_token=0)),
    ("weight_bytes", dict(weight_bytes=float("nan"))),
    ("mem_util", dict(mem_util=0)),
    ("headroom", dict(headroom=0.999)),
    ("headroom", dict(headroom=float("inf"))),
    ("reserve_gb", dict(reserve_gb=float("inf"))),
    ("gpu_mem_gb", dict(gpu_mem_gb=float("inf"))),
    ("qps", dict(qps=float("inf"))),
    ("input_len", dict(input_len=2.0)),
    ("output_len", dict(output_len=True)),
]


@pytest.mark.parametrize("field,change", BAD_PLAN, ids=[f"{f}_{i}" for i, (f, _) in enumerate(BAD_PLAN)])
def test_invalid_plan(field, change):
    kwargs = dict(H100_70B, qps=200, input_len=2000, output_len=500, tpot_ms=50)
    kwargs.update(change)
    expect_value_error(call(submission, "plan"), field=field, **kwargs)


def test_invalid_helpers():
    expect_value_error(call(submission, "max_batch_by_kv"), 1e9, 1000, 0, field="avg_context")
    expect_value_error(call(submission, "max_batch_by_kv"), 1e9, -1, 100, field="kv_bytes_per_token")
    step = call(submission, "decode_step_ms")
    expect_value_error(step, -1, 100, weight_bytes=1e9, kv_bytes_per_token=1000, bandwidth_gbs=100,
                       field="batch")
    expect_value_error(step, 1, 100, weight_bytes=1e9, kv_bytes_per_token=1000, bandwidth_gbs=0,
                       field="bandwidth_gbs")
    expect_value_error(call(submission, "prefill_rps"), 100, params=1e9, gpus_per_instance=1,
                       gpu_tflops=100, mfu=0, field="mfu")
    for budget in (float("nan"), float("inf"), -float("inf")):
        expect_value_error(call(submission, "max_batch_by_kv"), budget, 1000, 100, field="kv_budget_bytes")
    expect_value_error(call(submission, "max_batch_by_kv"), 1e9, 1000, float("inf"), field="avg_context")
    expect_value_error(step, 1.0, 100, weight_bytes=1e9, kv_bytes_per_token=1000, bandwidth_gbs=100,
                       field="batch")
    expect_value_error(step, 1, 100, weight_bytes=1e9, kv_bytes_per_token=1000, bandwidth_gbs=100,
                       overhead_ms=float("inf"), field="overhead_ms")


def _random_configs(n, seed=184):
    rng = random.Random(seed)
    configs = []
    while len(configs) < n:
        params = rng.uniform(1e9, 120e9)
        cfg = dict(
            qps=rng.uniform(0.5, 500), input_len=rng.randint(16, 16000), output_len=rng.randint(1, 4000),
            tpot_ms=rng.uniform(5, 120), params=params, weight_bytes=params * rng.choice([0.5, 1, 2]),
            kv_bytes_per_token=rng.choice([32768, 65536, 131072, 163840, 327680]) * rng.uniform(0.5, 2),
            gpus_per_instance=rng.choice([1, 2, 4, 8]), gpu_mem_gb=rng.choice([24, 48, 80, 141]),
            gpu_bandwidth_gbs=rng.uniform(800, 4800), gpu_tflops=rng.uniform(100, 2000),
            mfu=rng.uniform(0.2, 0.7), mem_util=rng.uniform(0.8, 0.95), reserve_gb=rng.uniform(0, 6),
            overhead_ms=rng.uniform(0, 3), headroom=rng.uniform(1.0, 1.6))
        try:
            reference.plan(**cfg)
        except ValueError:
            continue
        configs.append(cfg)
    return configs


RANDOM = _random_configs(20)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    got, expected = both("plan", **RANDOM[index])
    check_close(got, expected, rtol=RTOL)
