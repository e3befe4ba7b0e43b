"""Hidden cases for 149: dtypes, None fields, infeasible and invalid inputs, random plans.

Floats are compared with rtol=1e-9; integers exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
LLAMA70 = (70.6e9, 80, 8, 128)


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16", "fp8", "int8", "int4"])
def test_bytes_per_element(dtype):
    got, expected = both("bytes_per_element", dtype)
    check_close(got, expected)


def test_kv_per_token_gqa_bf16():
    got, expected = both("kv_bytes_per_token", 80, 8, 128, "bf16")
    check_close(got, expected)


def test_kv_per_token_mha_fp32():
    got, expected = both("kv_bytes_per_token", 32, 32, 128, "fp32")
    check_close(got, expected)


def test_plan_batch_given():
    got, expected = both("memory_plan", *LLAMA70, weight_dtype="bf16", kv_dtype="fp8", gpus=4,
                         gpu_mem_gb=80, batch=64)
    check_close(got, expected, rtol=RTOL)


def test_plan_both_given():
    got, expected = both("memory_plan", 8.03e9, 32, 8, 128, weight_dtype="bf16", kv_dtype="bf16",
                         gpus=1, gpu_mem_gb=24, mem_util=0.92, reserve_gb=1.5, context_len=4096, batch=3)
    check_close(got, expected, rtol=RTOL)


def test_plan_neither_given():
    got, expected = both("memory_plan", 7.2e9, 32, 8, 128, weight_dtype="int4", kv_dtype="fp8",
                         gpus=1, gpu_mem_gb=16, reserve_gb=0.7)
    check_close(got, expected, rtol=RTOL)


def test_plan_context_longer_than_budget():
    got, expected = both("memory_plan", *LLAMA70, weight_dtype="bf16", kv_dtype="bf16", gpus=2,
                         gpu_mem_gb=80, reserve_gb=1.3, context_len=2_000_000)
    check_close(got, expected, rtol=RTOL)


def test_infeasible_weights():
    expect_value_error(call(submission, "memory_plan"), *LLAMA70, weight_dtype="bf16",
                       kv_dtype="bf16", gpus=1, gpu_mem_gb=80, field="gpus")


def _plan_kwargs(**change):
    kwargs = dict(weight_dtype="bf16", kv_dtype="bf16", gpus=1, gpu_mem_gb=10, mem_util=1.0, reserve_gb=0)
    kwargs.update(change)
    return kwargs


def test_budget_exactly_zero_is_infeasible():
    expect_value_error(call(submission, "memory_plan"), 5e9, 2, 1, 64, field="gpus", **_plan_kwargs())


def test_budget_of_one_byte_fits_no_token():
    got, expected = both("memory_plan", (1e10 - 1) / 2, 2, 1, 64, **_plan_kwargs())
    check_close(got, expected, rtol=RTOL)


def test_lower_bounds_are_valid():
    got, expected = both("memory_plan", 0.5, 1, 1, 1, **_plan_kwargs(gpu_mem_gb=0.5, context_len=1, batch=1))
    check_close(got, expected, rtol=RTOL)


def test_mem_util_one_and_default_reserve():
    got, expected = both("memory_plan", 8e9, 32, 8, 128, weight_dtype="fp8", kv_dtype="fp8", gpus=1,
                         gpu_mem_gb=24, mem_util=1.0, context_len=8192)
    check_close(got, expected, rtol=RTOL)


def test_default_mem_util():
    got, expected = both("memory_plan", 8e9, 32, 8, 128, weight_dtype="fp8", kv_dtype="fp8", gpus=1,
                         gpu_mem_gb=24, reserve_gb=0.0, batch=7)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("dtype", "bytes_per_element", ("fp6",), {}),
    ("dtype", "kv_bytes_per_token", (80, 8, 128, "BF16"), {}),
    ("num_layers", "kv_bytes_per_token", (0, 8, 128, "bf16"), {}),
    ("num_kv_heads", "kv_bytes_per_token", (80, -8, 128, "bf16"), {}),
    ("head_dim", "kv_bytes_per_token", (80, 8, 0, "bf16"), {}),
    ("params", "memory_plan", (0, 80, 8, 128), dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
    ("gpus", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=0, gpu_mem_gb=80)),
    ("gpu_mem_gb", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=-80)),
    ("mem_util", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, mem_util=1.1)),
    ("reserve_gb", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, reserve_gb=-1)),
    ("context_len", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, context_len=0)),
    ("batch", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, batch=-2)),
    ("dtype", "memory_plan", LLAMA70, dict(weight_dtype="fp4", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
    ("dtype", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="fp6", gpus=8, gpu_mem_gb=80)),
    ("params", "memory_plan", (float("inf"), 80, 8, 128), dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
    ("gpu_mem_gb", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=float("nan"))),
    ("mem_util", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, mem_util=0)),
    ("reserve_gb", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80, reserve_gb=float("inf"))),
    ("gpus", "memory_plan", LLAMA70, dict(weight_dtype="bf16", kv_dtype="bf16", gpus=2.0, gpu_mem_gb=80)),
    ("num_layers", "memory_plan", (70.6e9, 0, 8, 128), dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
    ("num_kv_heads", "memory_plan", (70.6e9, 80, 0, 128), dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
    ("head_dim", "memory_plan", (70.6e9, 80, 8, 0), dict(weight_dtype="bf16", kv_dtype="bf16", gpus=8, gpu_mem_gb=80)),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def _plans(n, seed=149):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        cfg = dict(params=rng.uniform(0.5e9, 400e9), num_layers=rng.randint(16, 128),
                   num_kv_heads=rng.choice([1, 2, 4, 8, 16, 32]), head_dim=rng.choice([64, 96, 128, 256]),
                   weight_dtype=rng.choice(list(reference.BYTES)), kv_dtype=rng.choice(list(reference.BYTES)),
                   gpus=rng.choice([1, 2, 4, 8, 16]), gpu_mem_gb=rng.choice([24, 40, 48, 80, 96, 141, 192]),
                   mem_util=rng.uniform(0.8, 0.95), reserve_gb=rng.uniform(0, 5),
                   context_len=rng.choice([None, rng.randint(512, 200_000)]),
                   batch=rng.choice([None, rng.randint(1, 512)]))
        try:
            reference.memory_plan(**cfg)
        except ValueError:
            continue
        out.append(cfg)
    return out


RANDOM = _plans(15)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    got, expected = both("memory_plan", **RANDOM[index])
    check_close(got, expected, rtol=RTOL)
