"""Hidden cases for 133: exact fits and the eager edge, empty and unsorted capture lists, the capture
budget at 0 and above the distinct sizes, tie rules, random traces (and one decode trace from the
course simulator) vs the reference, whose choice is checked against an exhaustive search on small
traces. Floats are compared with rtol=1e-9; integers and lists exactly."""
import itertools
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


# --- padding_waste ----------------------------------------------------------------------------

def test_batch_equal_to_a_size_is_not_padded():
    check_close(*both("padding_waste", [8, 8, 16], [8, 16], 5), rtol=RTOL)


def test_batch_one_above_a_size_pads_to_the_next():
    check_close(*both("padding_waste", [9, 17], [8, 16, 32], 5), rtol=RTOL)


def test_batch_equal_to_the_largest_is_graphed():
    check_close(*both("padding_waste", [32, 32, 1], [1, 32], 7), rtol=RTOL)


def test_batch_one_above_the_largest_runs_eagerly():
    check_close(*both("padding_waste", [33, 32, 2], [1, 32], 7), rtol=RTOL)


def test_no_sizes_means_every_step_is_eager():
    check_close(*both("padding_waste", [1, 5, 9], [], 3), rtol=RTOL)


def test_unsorted_sizes():
    check_close(*both("padding_waste", [3, 5, 12, 20, 1, 7], [16, 4, 8], 10), rtol=RTOL)


def test_eager_cost_zero_counts_only_padding():
    check_close(*both("padding_waste", [3, 5, 12, 20], [4, 16], 0), rtol=RTOL)


def test_single_step_size_one():
    check_close(*both("padding_waste", [1], [1], 4), rtol=RTOL)


def test_default_vllm_like_sizes():
    sizes = [1, 2, 4] + list(range(8, 257, 8))
    trace = [((i * 37) % 300) + 1 for i in range(400)]
    check_close(*both("padding_waste", trace, sizes, 40), rtol=RTOL)


# --- choose_sizes -----------------------------------------------------------------------------

def test_budget_zero_is_all_eager():
    check_close(*both("choose_sizes", [1, 4, 4, 9], 0, 3), rtol=RTOL)


def test_budget_one():
    check_close(*both("choose_sizes", [1, 2, 3, 3, 4, 6, 7, 7, 8, 8, 8, 12, 13, 16, 20], 1, 6), rtol=RTOL)


def test_budget_equal_to_distinct_sizes_wastes_nothing():
    check_close(*both("choose_sizes", [2, 5, 5, 9], 3, 4), rtol=RTOL)


def test_budget_one_below_distinct_sizes():
    check_close(*both("choose_sizes", [2, 5, 5, 9], 2, 4), rtol=RTOL)


def test_budget_above_distinct_sizes_uses_only_what_is_needed():
    check_close(*both("choose_sizes", [2, 5, 5, 9], 10, 4), rtol=RTOL)


def test_eager_cost_zero_captures_nothing():
    check_close(*both("choose_sizes", [4, 4, 6], 2, 0), rtol=RTOL)


def test_equal_waste_takes_the_smaller_list():
    # capturing 3 (4 runs eagerly, 1 slot) and capturing 4 (3 padded by 1) waste the same
    check_close(*both("choose_sizes", [3, 4], 1, 1), rtol=RTOL)


def test_cheap_eager_leaves_the_tail_eager():
    check_close(*both("choose_sizes", [1, 1, 1, 2, 2, 40, 64], 2, 1), rtol=RTOL)


def test_costly_eager_captures_the_tail():
    check_close(*both("choose_sizes", [1, 1, 1, 2, 2, 40, 64], 2, 100), rtol=RTOL)


def test_one_distinct_size():
    check_close(*both("choose_sizes", [7, 7, 7], 4, 2), rtol=RTOL)


def test_wide_trace_needs_a_polynomial_search():
    # 256 distinct batch sizes and 10 graphs: far too many subsets to try them all
    rng = random.Random(1330)
    trace = [min(256, max(1, int(rng.gauss(96, 48)))) for _ in range(3000)] + list(range(1, 257))
    check_close(*both("choose_sizes", trace, 10, 25), rtol=RTOL)


def _exhaustive(batches, max_graphs, eager_cost):
    values = sorted(set(batches))
    keys = []
    for n in range(min(max_graphs, len(values)) + 1):
        for combo in itertools.combinations(values, n):
            w = reference.padding_waste(batches, list(combo), eager_cost)
            keys.append((w["padded_slots"] + eager_cost * w["eager_steps"], n, list(combo)))
    total, _, sizes = min(keys)
    return {"sizes": sizes, "waste": total / len(batches)}


def _trace(rng):
    """Decode batch sizes of a service whose concurrency drifts: a clipped random walk."""
    top = rng.choice([8, 16, 64, 128])
    b, out = rng.randint(1, top), []
    for _ in range(rng.randint(1, 120)):
        b = min(top, max(1, b + rng.randint(-3, 3)))
        out.append(b)
    return out


SMALL = []
_rng = random.Random(133)
for _ in range(12):
    SMALL.append(([_rng.randint(1, 14) for _ in range(_rng.randint(1, 12))], _rng.randint(0, 4), _rng.randint(0, 12)))

RANDOM = [(_trace(_rng), _rng.randint(0, 8), _rng.choice([0, 1, 5, 20, 60])) for _ in range(15)]


@pytest.mark.parametrize("index", range(len(SMALL)), ids=[f"{i:02d}" for i in range(len(SMALL))])
def test_small_matches_exhaustive_search(index):
    batches, k, e = SMALL[index]
    got, expected = both("choose_sizes", batches, k, e)
    if expected != _exhaustive(batches, k, e):
        raise RuntimeError("the reference differs from an exhaustive search")
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    batches, k, e = RANDOM[index]
    got, expected = both("choose_sizes", batches, k, e)
    check_close(got, expected, rtol=RTOL)
    w = reference.padding_waste(batches, expected["sizes"], e)
    if abs(w["waste"] - expected["waste"]) > 1e-12 * max(1.0, expected["waste"]):
        raise RuntimeError("the reference's choice does not waste what it reports")
    check_close(*both("padding_waste", batches, [1, 2, 4, 8, 16, 24, 32][:k], e), rtol=RTOL)


def _sim_trace():
    """Decode batch sizes per step of a simulated instance (sim's step log), or a fixed trace."""
    try:
        from sim import Setup, simulate
    except ImportError:
        return [((i * 13) % 40) + 1 for i in range(200)]
    setup = Setup(params=8e9, weight_bytes=16e9, kv_bytes_per_token=131072, kv_capacity_tokens=2_000_000,
                  max_num_seqs=48)
    steps = simulate(setup, rate=20.0, num_requests=300, input_len=256, output_len=128, seed=133).steps
    return [int(d) for d in steps.decoders if d > 0]


SIM_TRACE = _sim_trace()


def test_simulated_decode_trace():
    check_close(*both("choose_sizes", SIM_TRACE, 6, 30), rtol=RTOL)
    check_close(*both("padding_waste", SIM_TRACE, [1, 2, 4, 8, 16, 24, 32, 40, 48], 30), rtol=RTOL)


BAD = [
    ("batches", "padding_waste", ([], [4], 1)),
    ("batches", "padding_waste", ((1, 2), [4], 1)),
    ("batches", "padding_waste", ([1, 0], [4], 1)),
    ("batches", "padding_waste", ([1, 2.0], [4], 1)),
    ("batches", "padding_waste", ([True], [4], 1)),
    ("sizes", "padding_waste", ([1], (4,), 1)),
    ("sizes", "padding_waste", ([1], [4, 0], 1)),
    ("sizes", "padding_waste", ([1], [4, 4], 1)),
    ("sizes", "padding_waste", ([1], [4.0], 1)),
    ("sizes", "padding_waste", ([1], [False, 4], 1)),
    ("eager_cost", "padding_waste", ([1], [4], -1)),
    ("eager_cost", "padding_waste", ([1], [4], 1.5)),
    ("eager_cost", "padding_waste", ([1], [4], float("nan"))),
    ("batches", "choose_sizes", ([], 2, 1)),
    ("batches", "choose_sizes", ([3, -1], 2, 1)),
    ("max_graphs", "choose_sizes", ([1], -1, 1)),
    ("max_graphs", "choose_sizes", ([1], 2.0, 1)),
    ("max_graphs", "choose_sizes", ([1], True, 1)),
    ("eager_cost", "choose_sizes", ([1], 2, -1)),
    ("eager_cost", "choose_sizes", ([1], 2, float("inf"))),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
