"""Hidden cases for 160: every E4M3 number rounds to itself, every midpoint ties to the even
neighbour, the subnormal range and the 2^-6 boundary, saturation around 448, signs, huge and tiny
values; quantization with partial tiles, all-zero tiles and outliers; block-scaled products with K not
a multiple of the block, one block, exact cases, random cases vs the reference. Grid values exactly
(rtol 0), other floats with rtol=1e-9, atol=1e-12."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL, ATOL = 1e-9, 1e-12


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def grid():
    """All non-negative E4M3 numbers, from the bit patterns."""
    out = [m * 2.0 ** -9 for m in range(8)]
    for e in range(1, 16):
        for m in range(8):
            if e == 15 and m == 7:
                continue                       # S.1111.111 is NaN
            out.append((1 + m / 8) * 2.0 ** (e - 7))
    return out


GRID = grid()


def test_every_e4m3_number_is_kept():
    if len(GRID) != 127 or max(GRID) != 448.0:
        raise RuntimeError("the E4M3 grid is wrong")
    values = GRID + [-x for x in GRID]
    got, expected = both("to_e4m3", values)
    if expected != [float(v) for v in values]:
        raise RuntimeError("the reference moves an E4M3 number")
    check_close(got, expected, rtol=0)


def test_midpoints_tie_to_even():
    mids = [(a + b) / 2 for a, b in zip(GRID, GRID[1:])]
    check_close(*both("to_e4m3", mids + [-m for m in mids]), rtol=0)


def test_just_off_midpoints():
    mids = [(a + b) / 2 for a, b in zip(GRID, GRID[1:])]
    values = [m * (1 + 1e-9) for m in mids[1:]] + [m * (1 - 1e-9) for m in mids[1:]]
    check_close(*both("to_e4m3", values), rtol=0)


def test_saturation():
    check_close(*both("to_e4m3", [448.0, 449.0, 463.9, 464.0, 465.0, 480.0, 1e6, 1e300, -500.0]), rtol=0)


def test_subnormals_and_the_normal_boundary():
    values = [2.0 ** -6, 2.0 ** -6 * (1 - 1e-12), 2.0 ** -7, 2.0 ** -9, 2.0 ** -10, 2.0 ** -10 * 1.0001,
              3 * 2.0 ** -10, 2.0 ** -11, 1e-300, 7.5 * 2.0 ** -9, 15.5 * 2.0 ** -10]
    check_close(*both("to_e4m3", values + [-v for v in values]), rtol=0)


def test_zero_and_empty():
    check_close(*both("to_e4m3", [0.0, 0, -0.0]), rtol=0)
    check_close(*both("to_e4m3", []), rtol=0)


def test_integers_are_accepted():
    check_close(*both("to_e4m3", [1, 17, 300, -33]), rtol=0)


def test_power_of_two_boundaries_round_up_into_the_next_binade():
    values = [1.9375, 1.96875, 3.875, 3.9, 255.0, 248.0, 0.12109375]
    check_close(*both("to_e4m3", values), rtol=0)


# --- quantize ---------------------------------------------------------------------------------

def test_quantize_single_block():
    check_close(*both("quantize", [[1.0, -2.0], [0.5, 4.0]], 2, 2), rtol=RTOL, atol=ATOL)


def test_quantize_partial_tiles():
    m = [[float(i * 5 + j - 7) for j in range(5)] for i in range(3)]
    check_close(*both("quantize", m, 2, 3), rtol=RTOL, atol=ATOL)


def test_quantize_all_zero_tile_has_scale_one():
    check_close(*both("quantize", [[0.0, 0.0, 3.0], [0.0, 0.0, -1.0]], 2, 2), rtol=RTOL, atol=ATOL)


def test_quantize_outlier_crushes_its_tile_only():
    m = [[1000.0] + [0.01 * k for k in range(1, 8)], [0.01 * k for k in range(1, 9)]]
    check_close(*both("quantize", m, 1, 4), rtol=RTOL, atol=ATOL)
    check_close(*both("quantize", m, 2, 8), rtol=RTOL, atol=ATOL)


def test_quantize_blocks_larger_than_the_matrix():
    check_close(*both("quantize", [[0.3, -0.7]], 128, 128), rtol=RTOL, atol=ATOL)


def test_quantize_amax_maps_to_448():
    check_close(*both("quantize", [[-3.3, 1.1, 2.2]], 1, 3), rtol=RTOL, atol=ATOL)


# --- block_matmul -----------------------------------------------------------------------------

def test_exact_when_values_are_on_the_grid():
    check_close(*both("block_matmul", [[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], 2),
                rtol=RTOL, atol=ATOL)


def test_zero_product():
    check_close(*both("block_matmul", [[0.0, 0.0]], [[1.0], [2.0]], 2), rtol=RTOL, atol=ATOL)


def test_k_not_a_multiple_of_the_block():
    rng = random.Random(1)
    a = [[rng.gauss(0, 1) for _ in range(5)] for _ in range(3)]
    b = [[rng.gauss(0, 1) for _ in range(7)] for _ in range(5)]
    check_close(*both("block_matmul", a, b, 2), rtol=RTOL, atol=ATOL)
    check_close(*both("block_matmul", a, b, 3), rtol=RTOL, atol=ATOL)


def test_one_block_covers_everything():
    rng = random.Random(2)
    a = [[rng.gauss(0, 1) for _ in range(4)] for _ in range(2)]
    b = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(4)]
    check_close(*both("block_matmul", a, b, 128), rtol=RTOL, atol=ATOL)


def test_block_of_one_is_per_element_scaling():
    check_close(*both("block_matmul", [[0.3, -7.1], [2.0, 0.001]], [[1.7, 0.2], [-0.4, 9.0]], 1),
                rtol=RTOL, atol=ATOL)


def test_column_blocks_use_their_own_scale():
    a = [[1.0, 1.0]]
    b = [[1.0, 1.0, 1000.0, 0.3], [0.7, 2.0, 0.001, 5.0]]
    check_close(*both("block_matmul", a, b, 2), rtol=RTOL, atol=ATOL)


def test_outlier_channel_in_activations():
    rng = random.Random(3)
    a = [[rng.gauss(0, 1) * (300 if j == 3 else 1) for j in range(16)] for _ in range(4)]
    b = [[rng.gauss(0, 0.05) for _ in range(8)] for _ in range(16)]
    check_close(*both("block_matmul", a, b, 4), rtol=RTOL, atol=ATOL)
    check_close(*both("block_matmul", a, b, 16), rtol=RTOL, atol=ATOL)


_rng = random.Random(160)
RANDOM = []
for _ in range(12):
    m, k, n = _rng.randint(1, 6), _rng.randint(1, 20), _rng.randint(1, 9)
    scale = _rng.choice([1e-3, 1.0, 50.0])
    RANDOM.append(([[_rng.gauss(0, scale) for _ in range(k)] for _ in range(m)],
                   [[_rng.gauss(0, 1) for _ in range(n)] for _ in range(k)], _rng.randint(1, 8)))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    a, b, block = RANDOM[index]
    check_close(*both("block_matmul", a, b, block), rtol=RTOL, atol=ATOL)
    check_close(*both("quantize", a, 1, block), rtol=RTOL, atol=ATOL)
    check_close(*both("to_e4m3", [x * 37 for x in a[0]]), rtol=0)


# Cross-field and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("matrix", "quantize", ([[1.0, 2.0], [1.0]], 1, 1)),
    ("a", "block_matmul", ([[1.0], [1.0, 2.0]], [[1.0]], 1)),
    ("b", "block_matmul", ([[1.0, 2.0]], [[1.0]], 1)),
    ("b", "block_matmul", ([[1.0]], [[1.0], [2.0]], 1)),
    ("b", "block_matmul", ([[1.0]], [[1.0, 2.0], [1.0]], 1)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
