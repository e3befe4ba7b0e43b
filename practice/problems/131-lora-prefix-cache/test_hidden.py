"""Hidden cases for 131: adapter isolation, partial blocks, capacity edges, LRU order within and
across requests, random multi-adapter traffic vs the reference, invalid inputs."""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error


def run_and_check(capacity, block_size, requests):
    expected = reference.run_prefix_cache(capacity, block_size, requests)
    got = call(submission, "run_prefix_cache")(capacity, block_size, requests)
    if isinstance(got, list):
        for i, record in enumerate(got[:len(expected)]):
            if isinstance(record, dict) and isinstance(record.get("cached_blocks"), int) and \
                    not 0 <= record["cached_blocks"] <= capacity:          # never over capacity
                raise Mismatch("assert")
            check_close(record, expected[i], path=f"result[{i}]")
    check_close(got, expected)


def R(adapter, tokens):
    return {"adapter": adapter, "tokens": tokens}


def test_base_model_and_adapter_do_not_share():
    run_and_check(8, 2, [R(None, [1, 2, 3, 4]), R("a", [1, 2, 3, 4]), R(None, [1, 2, 3, 4]), R("a", [1, 2])])


def test_same_block_after_different_prefix_misses():
    run_and_check(8, 2, [R("a", [1, 2, 3, 4]), R("a", [9, 9, 3, 4]), R("a", [9, 9, 3, 4])])


def test_partial_block_is_not_cached():
    run_and_check(8, 4, [R("a", [1, 2, 3]), R("a", [1, 2, 3, 4]), R("a", [1, 2, 3, 4, 5, 6, 7])])


def test_capacity_exact_fit_then_one_more():
    run_and_check(3, 1, [R("a", [1, 2, 3]), R("a", [1, 2, 3]), R("a", [1, 2, 3, 4]), R("a", [1, 2, 3])])


def test_first_blocks_are_oldest_within_a_request():
    run_and_check(2, 1, [R("a", [1, 2]), R("b", [5]), R("a", [1, 2])])


def test_capacity_one():
    run_and_check(1, 2, [R("a", [1, 2, 3, 4]), R("a", [1, 2]), R("a", [3, 4]), R("a", [1, 2, 3, 4])])


def test_hit_refreshes_recency():
    run_and_check(3, 1, [R("x", [1]), R("y", [2]), R("x", [1]), R("z", [3]), R("w", [4]), R("x", [1]), R("y", [2])])


def test_empty_tokens():
    run_and_check(2, 4, [R("a", []), R("a", [1, 2, 3, 4]), R("a", [])])


def _traffic(seed):
    rng = random.Random(seed)
    bs = rng.choice([1, 2, 4])
    adapters = [None, "a", "b", "c"][:rng.randint(1, 4)]
    systems = [[rng.randrange(20) for _ in range(rng.randint(0, 4 * bs))] for _ in range(3)]
    reqs = []
    for _ in range(rng.randint(3, 40)):
        tokens = list(rng.choice(systems)) + [rng.randrange(20) for _ in range(rng.randint(0, 3 * bs))]
        reqs.append(R(rng.choice(adapters), tokens))
    return rng.choice([1, 3, 8, 32]), bs, reqs


RANDOM = [_traffic(131_000 + i) for i in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    run_and_check(*RANDOM[index])


BAD = [
    ("capacity_blocks", (0, 2, [])),
    ("capacity_blocks", (2.0, 2, [])),
    ("block_size", (2, 0, [])),
    ("block_size", (2, True, [])),
    ("requests", (2, 2, "abc")),
    ("requests", (2, 2, [{"tokens": [1, 2]}])),
    ("requests", (2, 2, [{"adapter": 3, "tokens": [1, 2]}])),
    ("requests", (2, 2, [{"adapter": "a", "tokens": "ab"}])),
]


@pytest.mark.parametrize("field,args", BAD, ids=[f"{f}_{i}" for i, (f, _) in enumerate(BAD)])
def test_invalid(field, args):
    expect_value_error(call(submission, "run_prefix_cache"), *args, field=field)


# No sim cross-check: sim caches blocks when a request ends, tail first, in an LRU of free blocks only; no adapters.
