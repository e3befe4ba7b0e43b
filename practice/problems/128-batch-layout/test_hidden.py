"""Hidden cases for 128: boundaries of decode/prefill, block edges, sampling rule, invalid entries,
random steps vs the reference."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(*args):
    expected = reference.batch_layout(*args)
    got = call(submission, "batch_layout")(*args)
    return got, expected


def E(seq, context, new, prompt_len, blocks):
    return {"seq": seq, "context": context, "new": new, "prompt_len": prompt_len, "blocks": blocks}


def test_context_equal_to_prompt_is_decode():
    check_close(*both([E("a", 3, 2, 9, [0, 1, 2]), E("b", 5, 1, 5, [4, 5])], 4))


def test_chunk_ending_exactly_at_prompt_samples():
    check_close(*both([E("a", 0, 8, 8, [6, 2]), E("b", 0, 7, 8, [1, 3])], 4))


def test_chunk_one_short_of_prompt_does_not_sample():
    check_close(*both([E("a", 2, 5, 8, [9, 8]), E("b", 7, 1, 8, [0, 1])], 4))


def test_positions_cross_block_edges():
    check_close(*both([E("x", 3, 6, 100, [5, 0, 9])], 3))


def test_block_table_exact_fit():
    check_close(*both([E("x", 7, 1, 4, [2, 1])], 4))


def test_block_size_one():
    check_close(*both([E("x", 0, 3, 3, [4, 1, 0]), E("y", 2, 1, 1, [7, 5, 6])], 1))


def test_only_decodes_keep_order():
    check_close(*both([E(s, 10 + i, 1, 3, list(range(i * 4, i * 4 + 4))) for i, s in enumerate("cab")], 4))


def test_only_prefills_keep_order():
    check_close(*both([E(s, 0, 2 + i, 9, [i, i + 3, i + 6]) for i, s in enumerate("zyx")], 4))


def _entries(rng):
    bs = rng.choice([1, 2, 4, 16])
    out, used = [], 0
    for i in range(rng.randint(1, 8)):
        prompt = rng.randint(1, 40)
        if rng.random() < 0.5:
            context, new = rng.randint(prompt, prompt + 30), 1
        else:
            context = rng.randint(0, prompt - 1)
            new = rng.randint(1, prompt - context)
        n_blocks = -(-(context + new) // bs) + rng.randint(0, 2)
        blocks = rng.sample(range(used, used + 3 * n_blocks + 3), n_blocks)
        used += 3 * n_blocks + 3
        out.append(E(f"s{i}", context, new, prompt, blocks))
    return out, bs


RANDOM = [_entries(random.Random(128_000 + i)) for i in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    check_close(*both(*RANDOM[index]))


BAD = [
    ("block_size", ([E("a", 0, 1, 1, [0])], 0)),
    ("block_size", ([E("a", 0, 1, 1, [0])], 2.0)),
    ("entries", ([], 4)),
    ("entries", ("a", 4)),
    ("entries", ([{"seq": "a", "context": 0, "new": 1, "prompt_len": 1}], 4)),
    ("entries", ([E("a", -1, 1, 1, [0])], 4)),
    ("entries", ([E("a", 0, 0, 1, [0])], 4)),
    ("entries", ([E("a", 0, 1, 0, [0])], 4)),
    ("entries", ([E("a", 0, 1.0, 1, [0])], 4)),
    ("entries", ([E("a", 4, 1, 2, [0])], 4)),
    ("entries", ([E("a", 0, 5, 4, [0, 1])], 4)),
]


@pytest.mark.parametrize("field,args", BAD, ids=[f"{f}_{i}" for i, (f, _) in enumerate(BAD)])
def test_invalid(field, args):
    expect_value_error(call(submission, "batch_layout"), *args, field=field)
