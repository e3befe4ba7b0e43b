"""Hidden cases for 161: no redundant slots, ties in load per replica (lowest index), full packs that are
lighter, equal weights (lowest index first), one pack, one item per pack, final counts as weights, all
zero loads, random cases vs the reference. Counts and expert ids exactly, loads with rtol=1e-9."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


# --- replicate --------------------------------------------------------------------------------

def test_no_redundant_slots():
    check_close(*both("replicate", [5, 9, 1], 0))


def test_one_redundant_slot_goes_to_the_hottest():
    check_close(*both("replicate", [5, 9, 1], 1))


def test_tie_in_load_per_replica_goes_to_the_lowest_index():
    # after one extra slot expert 1 has 8 / 2 = 4, equal to expert 2's 4
    check_close(*both("replicate", [1, 8, 4], 2))
    check_close(*both("replicate", [4, 4, 4, 4], 2))


def test_strictly_larger_later_expert_wins():
    check_close(*both("replicate", [4, 4, 5], 1))


def test_hot_expert_gets_many_replicas():
    check_close(*both("replicate", [1000, 1, 1, 1], 6))


def test_all_zero_loads():
    check_close(*both("replicate", [0, 0, 0], 2))


def test_deepseek_prefill_sized():
    rng = random.Random(7)
    loads = [int(rng.paretovariate(1.2) * 100) for _ in range(256)]
    check_close(*both("replicate", loads, 32))


# --- pack -------------------------------------------------------------------------------------

def test_one_item_per_pack():
    check_close(*both("pack", [3.0, 1.0, 2.0], 3), rtol=RTOL)


def test_one_pack_takes_everything_heaviest_first():
    check_close(*both("pack", [1.0, 3.0, 2.0], 1), rtol=RTOL)


def test_full_pack_is_skipped_even_when_lighter():
    # the two light items both want pack 1, but it fills up
    check_close(*both("pack", [10.0, 1.0, 1.0, 1.0], 2), rtol=RTOL)


def test_equal_weights_lowest_index_first_and_lowest_pack_on_ties():
    check_close(*both("pack", [2.0, 2.0, 2.0, 2.0], 2), rtol=RTOL)
    check_close(*both("pack", [1.0, 5.0, 5.0, 1.0, 3.0, 3.0], 3), rtol=RTOL)


def test_pack_ties_between_packs():
    check_close(*both("pack", [4, 3, 1, 4, 3, 1], 2), rtol=RTOL)
    check_close(*both("pack", [6, 3, 3, 2, 2, 2], 2), rtol=RTOL)


def test_integers_give_float_totals():
    check_close(*both("pack", [1, 2, 3, 4], 2), rtol=RTOL)


def test_zero_weights():
    check_close(*both("pack", [0, 0, 0, 0], 2), rtol=RTOL)


# --- place ------------------------------------------------------------------------------------

def test_place_without_redundancy():
    check_close(*both("place", [900, 300, 100, 100, 600, 200, 150, 50], 4, 0), rtol=RTOL)


def test_place_one_gpu():
    check_close(*both("place", [3, 1, 2], 1, 1), rtol=RTOL)


def test_place_weights_use_final_counts():
    # expert 0 gets both extra slots; all three of its copies weigh 600 / 3
    check_close(*both("place", [600, 100, 100, 100], 2, 1), rtol=RTOL)


def test_place_all_zero_loads_is_balanced():
    check_close(*both("place", [0, 0, 0, 0], 2, 1), rtol=RTOL)


def test_place_exactly_as_many_slots_as_experts():
    check_close(*both("place", [5, 1, 4, 2, 3, 6], 3, 0), rtol=RTOL)
    check_close(*both("place", [5, 1, 4, 2, 3, 6], 6, 0), rtol=RTOL)


def test_place_small_total_load():
    # mean load per GPU below 1 token: the imbalance is still max / mean
    check_close(*both("place", [1, 0], 2, 0), rtol=RTOL)
    check_close(*both("place", [1, 0, 0], 3, 0), rtol=RTOL)


def test_place_one_expert_everywhere():
    check_close(*both("place", [10], 1, 3), rtol=RTOL)
    check_close(*both("place", [10, 0, 0, 0], 4, 1), rtol=RTOL)


def _case(rng):
    gpus = rng.choice([1, 2, 4, 8])
    n = gpus * rng.randint(1, 5)
    loads = [rng.choice([0, rng.randint(0, 50), int(rng.paretovariate(1.1) * 100)]) for _ in range(n)]
    return loads, gpus, rng.randint(0, 3)


_rng = random.Random(161)
RANDOM = [_case(_rng) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    loads, gpus, redundant = RANDOM[index]
    check_close(*both("place", loads, gpus, redundant), rtol=RTOL)
    check_close(*both("replicate", loads, gpus * redundant))
    weights = [x / 7 for x in loads] * gpus
    check_close(*both("pack", weights, gpus), rtol=RTOL)


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("num_packs", "pack", ([1.0, 2.0, 3.0], 2)),
    ("num_packs", "pack", ([1.0, 2.0], 3)),
    ("num_gpus", "place", ([1, 2, 3], 2, 1)),
    ("num_gpus", "place", ([1, 2], 4, 0)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
