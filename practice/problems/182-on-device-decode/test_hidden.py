"""Hidden cases for 182: memory that fits exactly (free 0), one byte short, no KV, fractional bits;
decode speed with and without context, full efficiency; prefill at full and partial utilization;
random cases vs the reference. Floats with rtol=1e-9, fits exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close

RTOL = 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def close(got, expected):
    check_close(got, expected, rtol=RTOL, atol=1e-12)


def test_memory_exact_zero_dyadic():
    # weights 0.5 GB (1e9 params at 4 bits), KV 0.25 GB, RAM 1, reserved 0.25: free exactly 0
    close(*both("memory_plan", 1e9, 4, 1000, 250000, 1.0, 0.25))


def test_memory_one_byte_short():
    close(*both("memory_plan", 1e9, 4, 1000, 250001, 1.0, 0.25))


def test_memory_no_context_no_reserve():
    close(*both("memory_plan", 7e9, 4.5, 0, 131072, 16, 0))


def test_memory_long_context_kv_dominates():
    close(*both("memory_plan", 3.2e9, 4.5, 32768, 114688, 8, 4.5))


def test_decode_without_context():
    close(*both("decode_tokens_per_s", 3.2e9, 4.5, 0, 114688, 51.2, 0.7))


def test_decode_full_efficiency():
    close(*both("decode_tokens_per_s", 8e9, 4, 8192, 131072, 120, 1.0))


def test_decode_laptop_sizes():
    for params, bits in ((1e9, 16), (8e9, 4.5), (70e9, 4)):
        close(*both("decode_tokens_per_s", params, bits, 2048, 131072, 400, 0.8))


def test_prefill():
    close(*both("prefill_s", 1000, 3.2e9, 35, 0.3))
    close(*both("prefill_s", 1, 1e9, 1, 1.0))


_rng = random.Random(182)
RANDOM = [(_rng.uniform(0.5e9, 14e9), _rng.choice([2, 3.5, 4, 4.5, 8, 16]), _rng.randint(0, 32768),
           _rng.choice([0, 32768, 114688, 131072]), _rng.choice([4, 8, 12, 16, 24]), _rng.uniform(0, 6),
           _rng.uniform(20, 500), _rng.uniform(0.3, 1.0), _rng.randint(1, 8000), _rng.uniform(5, 50))
          for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    params, bits, ctx, kv, ram, reserved, bw, eff, prompt, tops = RANDOM[index]
    close(*both("memory_plan", params, bits, ctx, kv, ram, reserved))
    close(*both("decode_tokens_per_s", params, bits, ctx, kv, bw, eff))
    close(*both("prefill_s", prompt, params, tops, eff))
