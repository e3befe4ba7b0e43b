"""Hidden cases for 167: every format, group sizes, unsorted choices, infeasible and invalid inputs,
random inputs vs the reference. Floats are compared with rtol=1e-9; integers exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


@pytest.mark.parametrize("fmt", ["bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp4"])
def test_bytes_per_param(fmt):
    got, expected = both("bytes_per_param", fmt)
    check_close(got, expected, rtol=RTOL)


def test_int4_group_32():
    got, expected = both("bytes_per_param", "int4", group_size=32)
    check_close(got, expected, rtol=RTOL)


def test_mxfp4_ignores_group_size():
    got, expected = both("bytes_per_param", "mxfp4", group_size=64)
    check_close(got, expected, rtol=RTOL)


def test_min_gpus_single():
    got, expected = both("min_gpus", 8e9, "bf16", 24)
    check_close(got, expected)


def test_min_gpus_unsorted_choices():
    got, expected = both("min_gpus", 70e9, "fp8", 80, choices=[8, 2, 4, 1])
    check_close(got, expected)


def test_min_gpus_odd_choices():
    got, expected = both("min_gpus", 671e9, "fp8", 141, kv_reserve_gb=150, choices=(6, 3, 12))
    check_close(got, expected)


def test_min_gpus_infeasible():
    expect_value_error(call(submission, "min_gpus"), 405e9, "bf16", 80, field="choices")


def test_decode_floor_bf16():
    got, expected = both("decode_floor_ms", 70e9, "bf16", 8, 3350)
    check_close(got, expected, rtol=RTOL)


def test_decode_floor_fp4_group16():
    got, expected = both("decode_floor_ms", 70e9, "fp4", 4, 8000, group_size=16)
    check_close(got, expected, rtol=RTOL)


def test_group_size_one_is_valid():
    got, expected = both("bytes_per_param", "fp4", group_size=1)
    check_close(got, expected, rtol=RTOL)


def test_min_gpus_exact_fit():
    # 30e9 bf16 weights + 20 GB of KV = exactly 80 GB of one GPU at mem_util 1.0
    got, expected = both("min_gpus", 30e9, "bf16", 80, kv_reserve_gb=20, mem_util=1.0)
    check_close(got, expected)


def test_min_gpus_one_byte_over():
    got, expected = both("min_gpus", 30000000000.5, "bf16", 80, kv_reserve_gb=20, mem_util=1.0)
    check_close(got, expected)


def test_min_gpus_defaults_near_the_edge():
    # 71.5 GB of fp8 weights: fits one 80 GB GPU at 0.9 only with the default (zero) KV reserve
    got, expected = both("min_gpus", 71.5e9, "fp8", 80)
    check_close(got, expected)
    # int4 with the default group of 128: 139.65e9 params -> 72.007 GB, two GPUs (group 129 would fit one)
    got, expected = both("min_gpus", 139.65e9, "int4", 72, mem_util=1.0)
    check_close(got, expected)
    got, expected = both("min_gpus", 139.6e9, "int4", 72, mem_util=1.0)
    check_close(got, expected)


def test_min_gpus_small_values():
    got, expected = both("min_gpus", 0.5, "bf16", 0.5, kv_reserve_gb=0.0)
    check_close(got, expected)


def test_decode_floor_one_gpu_default_group():
    got, expected = both("decode_floor_ms", 70e9, "int4", 1, 3350)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("fmt", "bytes_per_param", ("int3",), {}),
    ("fmt", "bytes_per_param", ("BF16",), {}),
    ("group_size", "bytes_per_param", ("int4",), {"group_size": 0}),
    ("params", "min_gpus", (0, "fp8", 80), {}),
    ("gpu_mem_gb", "min_gpus", (70e9, "fp8", 0), {}),
    ("kv_reserve_gb", "min_gpus", (70e9, "fp8", 80), {"kv_reserve_gb": -1}),
    ("mem_util", "min_gpus", (70e9, "fp8", 80), {"mem_util": 0}),
    ("choices", "min_gpus", (70e9, "fp8", 80), {"choices": []}),
    ("choices", "min_gpus", (70e9, "fp8", 80), {"choices": [0, 2]}),
    ("gpus", "decode_floor_ms", (70e9, "fp8", 0, 3350), {}),
    ("gpu_bandwidth_gbs", "decode_floor_ms", (70e9, "fp8", 8, -1), {}),
    ("fmt", "decode_floor_ms", (70e9, "nf4", 8, 3350), {}),
    ("fmt", "min_gpus", (70e9, "int2", 80), {}),
    ("mem_util", "min_gpus", (70e9, "fp8", 80), {"mem_util": 1.01}),
    ("kv_reserve_gb", "min_gpus", (70e9, "fp8", 80), {"kv_reserve_gb": float("inf")}),
    ("params", "decode_floor_ms", (float("nan"), "fp8", 8, 3350), {}),
    ("gpu_mem_gb", "min_gpus", (70e9, "fp8", float("inf")), {}),
    ("group_size", "decode_floor_ms", (70e9, "int4", 8, 3350), {"group_size": 2.0}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _cases(n, seed=167):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        cfg = dict(params=rng.uniform(1e9, 1000e9), fmt=rng.choice(reference.FORMATS),
                   gpu_mem_gb=rng.choice([24, 48, 80, 96, 141, 192]), kv_reserve_gb=rng.uniform(0, 400),
                   mem_util=rng.uniform(0.8, 0.95), group_size=rng.choice([16, 32, 64, 128, 256]),
                   choices=rng.sample([1, 2, 4, 8, 16, 32, 64], k=rng.randint(1, 7)))
        try:
            reference.min_gpus(**cfg)
        except ValueError:
            continue
        out.append(cfg)
    return out


RANDOM = _cases(15)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    cfg = RANDOM[index]
    got, expected = both("min_gpus", **cfg)
    check_close(got, expected)
    got, expected = both("decode_floor_ms", cfg["params"], cfg["fmt"], expected, 3350,
                         group_size=cfg["group_size"])
    check_close(got, expected, rtol=RTOL)
