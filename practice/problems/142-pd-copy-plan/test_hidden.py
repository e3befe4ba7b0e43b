"""Hidden cases for 142: copies merge only when both sides are consecutive and the previous block is
copied too (the cached prefix never merges), every TP layout (equal, larger, smaller, replicated on
either side), round-robin reads of replicated heads, byte counts per rank, random cases vs the
reference. Everything returned is an integer and compared exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


# --- copy_plan --------------------------------------------------------------------------------

def test_fully_contiguous_is_one_copy():
    check_close(*both("copy_plan", [[4, 10], [5, 11], [6, 12], [7, 13]], 100))


def test_nothing_contiguous_is_one_copy_per_block():
    check_close(*both("copy_plan", [[9, 2], [3, 8], [6, 4], [1, 0]], 64))


def test_only_source_contiguous_does_not_merge():
    check_close(*both("copy_plan", [[1, 7], [2, 5], [3, 9]], 10))


def test_only_destination_contiguous_does_not_merge():
    check_close(*both("copy_plan", [[1, 7], [5, 8], [3, 9]], 10))


def test_descending_runs_do_not_merge():
    check_close(*both("copy_plan", [[5, 9], [4, 8], [3, 7]], 10))


def test_gap_of_two_does_not_merge():
    check_close(*both("copy_plan", [[0, 0], [2, 2], [3, 4]], 10))


def test_empty_tables():
    check_close(*both("copy_plan", [], 4096))


def test_cached_blocks_at_the_length_is_accepted():
    check_close(*both("copy_plan", [[1, 1]], 8, 1))


def test_everything_cached_copies_nothing():
    check_close(*both("copy_plan", [[3, 6], [4, 7], [5, 8]], 512, 3))


def test_cached_block_does_not_merge_with_the_first_copied():
    check_close(*both("copy_plan", [[3, 6], [4, 7], [5, 8]], 512, 1))
    check_close(*both("copy_plan", [[3, 6], [4, 7], [5, 8]], 512, 2))


def test_cached_default_is_zero():
    check_close(*both("copy_plan", [[0, 5], [1, 6], [7, 2]], 8))


def test_block_zero_and_one_byte_blocks():
    check_close(*both("copy_plan", [[0, 1], [1, 2]], 1))
    check_close(*both("copy_plan", [[1, 0], [0, 1]], 1))


def test_single_block():
    check_close(*both("copy_plan", [[17, 0]], 16384))


def test_last_block_wraps_check():
    # a mistaken merge test that looks at the last entry for the first block would merge here
    check_close(*both("copy_plan", [[5, 8], [9, 3], [4, 7]], 16))


def test_llama70b_per_rank_blocks():
    # 16 tokens x 1 KV head (TP 8 of 8) x 128 x K,V x BF16 = 8192 bytes per block per layer
    src = list(range(100, 164)) + list(range(300, 332))
    dst = list(range(0, 40)) + list(range(1000, 1056))
    check_close(*both("copy_plan", [list(p) for p in zip(src, dst)], 8192, 8))


# --- tp_plan ----------------------------------------------------------------------------------

def test_equal_tp_is_identity():
    check_close(*both("tp_plan", 8, 8, 8))
    check_close(*both("tp_plan", 8, 4, 4))


def test_prefill_wider_than_decode():
    check_close(*both("tp_plan", 8, 8, 2))
    check_close(*both("tp_plan", 16, 8, 1))


def test_prefill_narrower_than_decode():
    check_close(*both("tp_plan", 8, 2, 8))
    check_close(*both("tp_plan", 8, 1, 4))


def test_tp_equal_to_heads_is_one_head_each():
    check_close(*both("tp_plan", 4, 4, 2))
    check_close(*both("tp_plan", 4, 2, 4))


def test_decode_replicates_heads():
    check_close(*both("tp_plan", 2, 2, 8))
    check_close(*both("tp_plan", 4, 2, 8))


def test_prefill_replicates_heads_round_robin():
    check_close(*both("tp_plan", 2, 4, 8))
    check_close(*both("tp_plan", 2, 8, 4))
    check_close(*both("tp_plan", 1, 4, 2))
    check_close(*both("tp_plan", 1, 3, 5))


def test_both_sides_replicate():
    check_close(*both("tp_plan", 1, 8, 8))
    check_close(*both("tp_plan", 2, 8, 16))
    check_close(*both("tp_plan", 4, 8, 8))


def test_one_rank_each_side():
    check_close(*both("tp_plan", 8, 1, 1))
    check_close(*both("tp_plan", 1, 1, 1))


def test_pieces_merge_only_for_the_same_source():
    check_close(*both("tp_plan", 12, 3, 2))
    check_close(*both("tp_plan", 12, 6, 4))
    check_close(*both("tp_plan", 12, 4, 6))


# --- rank_bytes -------------------------------------------------------------------------------

def test_bytes_llama70b_tp8_to_tp4():
    # Llama 3 70B: 8 KV heads, 80 layers, head_dim 128, BF16
    check_close(*both("rank_bytes", 8, 8, 4, 3000, 80, 128, 2))


def test_bytes_with_replicated_decode():
    check_close(*both("rank_bytes", 2, 2, 8, 1000, 2, 128, 2))


def test_bytes_with_replicated_prefill_are_shared():
    check_close(*both("rank_bytes", 2, 8, 4, 1000, 2, 128, 1))
    check_close(*both("rank_bytes", 1, 4, 2, 7, 3, 64, 1))


def test_bytes_one_token_one_layer():
    check_close(*both("rank_bytes", 4, 4, 1, 1, 1, 1, 1))
    check_close(*both("rank_bytes", 4, 1, 2, 1, 1, 1, 2))


def test_bytes_distinct_sizes_per_factor():
    check_close(*both("rank_bytes", 6, 3, 6, 5, 7, 11, 2))
    check_close(*both("rank_bytes", 6, 2, 12, 13, 3, 5, 4))


def _layouts(rng):
    heads = rng.choice([1, 2, 4, 6, 8, 12, 16])
    options = sorted({t for t in range(1, 33) if (t <= heads and heads % t == 0) or (t > heads and t % heads == 0)})
    return heads, rng.choice(options), rng.choice(options)


def _tables(rng):
    n = rng.randint(0, 40)
    pool_s, pool_d = rng.randint(n, 3 * n + 2), rng.randint(n, 3 * n + 2)
    if rng.random() < 0.5:
        s0, d0 = rng.randint(0, pool_s - n), rng.randint(0, pool_d - n)
        src, dst = list(range(s0, s0 + n)), list(range(d0, d0 + n))
        for _ in range(rng.randint(0, 4)):
            if n >= 2:
                i, j = rng.randrange(n), rng.randrange(n)
                dst[i], dst[j] = dst[j], dst[i]
    else:
        src, dst = rng.sample(range(pool_s), n), rng.sample(range(pool_d), n)
    return src, dst, rng.choice([1, 64, 8192, 16384]), rng.randint(0, n)


_rng = random.Random(142)
RANDOM = [(_tables(_rng), _layouts(_rng), _rng.randint(1, 5000), _rng.randint(1, 80)) for _ in range(20)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    (src, dst, nbytes, cached), (heads, ptp, dtp), tokens, layers = RANDOM[index]
    check_close(*both("copy_plan", [list(p) for p in zip(src, dst)], nbytes, cached))
    check_close(*both("tp_plan", heads, ptp, dtp))
    check_close(*both("rank_bytes", heads, ptp, dtp, tokens, layers, 128, 2))


# Cross-field and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("block_pairs", "copy_plan", ([[1, 1], [1, 2]], 8)),
    ("block_pairs", "copy_plan", ([[4, 0], [2, 1], [4, 2]], 8)),
    ("block_pairs", "copy_plan", ([[1, 3], [2, 3]], 8)),
    ("block_pairs", "copy_plan", ([[0, 5], [1, 6], [2, 5]], 8)),
    ("cached_blocks", "copy_plan", ([[1, 1]], 8, 2)),
    ("cached_blocks", "copy_plan", ([], 8, 1)),
    ("prefill_tp", "tp_plan", (8, 3, 1)),
    ("prefill_tp", "tp_plan", (8, 12, 1)),
    ("decode_tp", "tp_plan", (8, 1, 6)),
    ("decode_tp", "tp_plan", (4, 1, 10)),
    ("prefill_tp", "rank_bytes", (8, 5, 1, 1, 1, 1, 1)),
    ("decode_tp", "rank_bytes", (6, 2, 4, 1, 1, 1, 1))
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
