"""Hidden cases for 156: prompts shorter than a block, exactly one block, whole blocks plus one token,
outputs of 0, a group of one (sharing saves nothing), block size 1; prefill with n = 1, prompts of one
token, block-aligned prompts, huge groups; random cases vs the reference (and the reference checked:
sharing never needs more blocks, caching never computes more tokens). Integers exactly, fractions with
rtol=1e-9."""
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


def test_prompt_shorter_than_a_block():
    check_close(*both("group_kv_blocks", 5, [3, 20], 16))


def test_prompt_exactly_one_block():
    check_close(*both("group_kv_blocks", 16, [0, 1, 16, 17], 16))


def test_whole_blocks_plus_one_token():
    check_close(*both("group_kv_blocks", 33, [15, 16, 31], 16))


def test_zero_outputs():
    check_close(*both("group_kv_blocks", 40, [0, 0, 0], 16))


def test_group_of_one_saves_nothing():
    check_close(*both("group_kv_blocks", 1000, [300], 16))


def test_block_size_one():
    check_close(*both("group_kv_blocks", 7, [2, 3], 1))


def test_large_group():
    check_close(*both("group_kv_blocks", 4096, [512 * (i % 7) for i in range(64)], 16))


def test_prefill_n_one():
    check_close(*both("rollout_prefill_tokens", [100, 7], 1, 16), rtol=RTOL)


def test_prefill_one_token_prompts():
    check_close(*both("rollout_prefill_tokens", [1, 1], 8, 16), rtol=RTOL)


def test_prefill_block_aligned_prompt_recomputes_a_block():
    check_close(*both("rollout_prefill_tokens", [512], 4, 16), rtol=RTOL)
    check_close(*both("rollout_prefill_tokens", [513], 4, 16), rtol=RTOL)
    check_close(*both("rollout_prefill_tokens", [511], 4, 16), rtol=RTOL)


def test_prefill_empty():
    check_close(*both("rollout_prefill_tokens", [], 8, 16), rtol=RTOL)


def test_prefill_block_size_one():
    check_close(*both("rollout_prefill_tokens", [10, 3], 5, 1), rtol=RTOL)


_rng = random.Random(156)
RANDOM = [(_rng.randint(1, 5000), [_rng.randint(0, 4000) for _ in range(_rng.randint(1, 32))],
           _rng.choice([1, 8, 16, 32, 64]), [_rng.randint(1, 8000) for _ in range(_rng.randint(0, 10))],
           _rng.randint(1, 64)) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    p, outs, b, prompts, n = RANDOM[index]
    got, expected = both("group_kv_blocks", p, outs, b)
    if expected["shared"] > expected["unshared"]:
        raise RuntimeError("the reference's sharing needs more blocks")
    check_close(got, expected)
    got, expected = both("rollout_prefill_tokens", prompts, n, b)
    if expected["with_cache"] > expected["without_cache"]:
        raise RuntimeError("the reference's cache computes more tokens")
    check_close(got, expected, rtol=RTOL)


SIM = [([_rng.randint(1, 3000) for _ in range(_rng.randint(1, 4))], _rng.randint(1, 6), _rng.choice([16, 32]))
       for _ in range(6)]


@pytest.mark.parametrize("index", range(len(SIM)), ids=[f"{i:02d}" for i in range(len(SIM))])
def test_cached_prefill_matches_sim(index):
    prompts, n, block = SIM[index]
    got, expected = both("rollout_prefill_tokens", prompts, n, block)
    try:
        from sim import Setup
        from sim.engine import Instance
        from sim.kv import Paged, PrefixCache
    except ImportError:
        Instance = None
    if Instance is not None:
        setup = Setup(params=8e9, weight_bytes=16e9, kv_bytes_per_token=131072, kv_capacity_tokens=400000,
                      kv=Paged(block_size=block), prefix_cache=PrefixCache())
        engine, t = Instance(setup), 0.0
        for key, p in enumerate(prompts):
            for _ in range(n):
                engine.submit(t, p, 2, prefix=((key + 1, p),))
                t += 30.0          # each sample finishes (and caches its blocks) before the next arrives
        engine.advance()
        result = engine.result()
        computed = int(sum(result.prompt_tokens) - sum(result.cached_tokens))
        if computed != expected["with_cache"]:
            raise RuntimeError("the reference's cached prefill differs from sim's prefix cache")
    check_close(got, expected, rtol=RTOL)
