"""Hidden cases for 127: hand-made sequences at every boundary, random and adversarial operation
sequences vs the reference, with the pool's invariants checked after every operation."""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error


def run_and_check(num_blocks, block_size, ops):
    expected = reference.run_block_pool(num_blocks, block_size, ops)
    got = call(submission, "run_block_pool")(num_blocks, block_size, ops)
    if isinstance(got, list) and len(got) == len(expected):
        for i, record in enumerate(got):
            if isinstance(record, dict) and isinstance(record.get("refs"), list) and \
                    isinstance(record.get("free"), int):
                refs = record["refs"]
                if record["free"] != sum(1 for r in refs if r == 0):      # a leaked or double-freed block
                    raise Mismatch("assert")
                if any(not isinstance(r, int) or r < 0 for r in refs):
                    raise Mismatch("assert")
            check_close(record, expected[i], path=f"result[{i}]")
    check_close(got, expected)


def test_alloc_exact_fit_of_the_pool():
    run_and_check(3, 4, [["alloc", "a", 12], ["alloc", "b", 1], ["free", "a"], ["alloc", "b", 1]])


def test_alloc_one_token_over_the_pool_fails():
    run_and_check(3, 4, [["alloc", "a", 13], ["alloc", "a", 12]])


def test_lowest_free_block_first():
    run_and_check(6, 2, [["alloc", "a", 2], ["alloc", "b", 3], ["alloc", "c", 1], ["free", "b"],
                         ["alloc", "d", 1], ["alloc", "e", 4]])


def test_append_into_partial_block_needs_no_block():
    run_and_check(4, 4, [["alloc", "a", 2], ["append", "a", 2], ["append", "a", 1], ["append", "a", 3]])


def test_append_to_shared_full_block_does_not_copy():
    run_and_check(6, 4, [["alloc", "a", 8], ["fork", "a", "b"], ["append", "b", 1], ["append", "a", 4]])


def test_copy_on_write_on_both_sides():
    run_and_check(8, 4, [["alloc", 1, 5], ["fork", 1, 2], ["append", 1, 1], ["append", 2, 1],
                         ["append", 2, 1], ["free", 1], ["free", 2]])


def test_copy_needs_a_free_block():
    # the pool is full: the fork's append needs one block for the copy and fails atomically
    run_and_check(2, 4, [["alloc", "a", 5], ["fork", "a", "b"], ["append", "b", 1], ["free", "a"],
                         ["append", "b", 1]])


def test_append_atomic_when_short_by_one():
    run_and_check(4, 2, [["alloc", "a", 3], ["fork", "a", "b"], ["append", "b", 4], ["append", "b", 3]])


def test_block_size_one():
    run_and_check(5, 1, [["alloc", "x", 2], ["fork", "x", "y"], ["append", "y", 3], ["append", "x", 1],
                         ["free", "y"], ["append", "x", 2]])


def test_fork_chain_freed_in_mixed_order():
    run_and_check(10, 3, [["alloc", "r", 7], ["fork", "r", "c1"], ["fork", "c1", "c2"], ["append", "c2", 2],
                          ["free", "r"], ["append", "c1", 5], ["free", "c2"], ["free", "c1"],
                          ["alloc", "r", 30]])


def test_single_block_pool():
    run_and_check(1, 16, [["alloc", "a", 16], ["append", "a", 1], ["fork", "a", "b"], ["free", "a"],
                          ["append", "b", 1], ["free", "b"], ["alloc", "c", 1]])


def _random_ops(rng, n_ops, block_size, names=8):
    live, ops, lengths = [], [], {}
    for _ in range(n_ops):
        kind = rng.choices(["alloc", "append", "fork", "free"], weights=[3, 5, 3, 2])[0]
        unused = [s for s in range(names) if s not in live]
        if kind == "alloc" or not live:
            if not unused:
                continue
            s = rng.choice(unused)
            n = rng.choice([1, block_size, block_size + 1, rng.randint(1, 5 * block_size)])
            ops.append(["alloc", s, n])
            live.append(s)            # may fail; the reference tells, so track through it below
        elif kind == "append":
            ops.append(["append", rng.choice(live), rng.choice([1, 1, block_size - 1 or 1, block_size,
                                                                rng.randint(1, 3 * block_size)])])
        elif kind == "fork":
            if not unused:
                continue
            child = rng.choice(unused)
            ops.append(["fork", rng.choice(live), child])
            live.append(child)
        else:
            s = rng.choice(live)
            ops.append(["free", s])
            live.remove(s)
    return ops


def _valid_prefix(num_blocks, block_size, ops):
    """Drop operations the reference rejects as invalid (e.g. after a failed alloc)."""
    kept = []
    for op in ops:
        try:
            reference.run_block_pool(num_blocks, block_size, kept + [op])
        except ValueError:
            continue
        kept.append(op)
    return kept


def _cases(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        bs = rng.choice([1, 2, 4, 16])
        nb = rng.choice([2, 5, 12, 40])
        out.append((nb, bs, _valid_prefix(nb, bs, _random_ops(rng, rng.randint(10, 40), bs))))
    return out


RANDOM = _cases(12, 127)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    run_and_check(*RANDOM[index])


BAD = [
    ("num_blocks", (0, 4, [])),
    ("num_blocks", (2.0, 4, [])),
    ("block_size", (4, 0, [])),
    ("block_size", (4, True, [])),
    ("ops", (4, 4, "alloc")),
    ("ops", (4, 4, [["grow", "a", 1]])),
    ("ops", (4, 4, [["alloc", "a"]])),
    ("ops", (4, 4, [["alloc", "a", 0]])),
    ("ops", (4, 4, [["alloc", "a", 1.0]])),
    ("ops", (4, 4, [["alloc", "a", 1], ["alloc", "a", 1]])),
    ("ops", (4, 4, [["append", "a", 1]])),
    ("ops", (4, 4, [["alloc", "a", 1], ["append", "a", 0]])),
    ("ops", (4, 4, [["free", "a"]])),
    ("ops", (4, 4, [["fork", "a", "b"]])),
    ("ops", (4, 4, [["alloc", "a", 1], ["alloc", "b", 1], ["fork", "a", "b"]])),
]


@pytest.mark.parametrize("field,args", BAD, ids=[f"{f}_{i}" for i, (f, _) in enumerate(BAD)])
def test_invalid(field, args):
    expect_value_error(call(submission, "run_block_pool"), *args, field=field)
