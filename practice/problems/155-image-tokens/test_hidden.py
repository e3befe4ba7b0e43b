"""Hidden cases for 155: sizes already multiples of 28, halves rounding to even, tiny images scaled up
to min_pixels, huge photos scaled down to max_pixels, area exactly at the limits, the 28-pixel floor,
aspect ratio 200 (allowed) and above; tiles for images inside and outside 2048, shortest side exactly
768, exact-fraction boundaries, low detail; random sizes vs the reference. Everything exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

DEFAULT = (3136, 1003520)


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_multiples_of_28_unchanged():
    check_close(*both("qwen_vl_tokens", 560, 840, *DEFAULT))


def test_halves_round_to_even():
    check_close(*both("qwen_vl_tokens", 42, 70, 1, 10**8))
    check_close(*both("qwen_vl_tokens", 98, 126, 1, 10**8))


def test_tiny_image_scaled_up():
    check_close(*both("qwen_vl_tokens", 20, 30, *DEFAULT))
    check_close(*both("qwen_vl_tokens", 1, 1, *DEFAULT))


def test_phone_photo_scaled_down():
    check_close(*both("qwen_vl_tokens", 3024, 4032, *DEFAULT))
    check_close(*both("qwen_vl_tokens", 4032, 3024, 3136, 12845056))


def test_area_exactly_at_the_limits():
    check_close(*both("qwen_vl_tokens", 56, 56, 3136, 3136))
    check_close(*both("qwen_vl_tokens", 28 * 32, 28 * 40, 3136, 28 * 28 * 1280))
    check_close(*both("qwen_vl_tokens", 28 * 32, 28 * 40, 3136, 28 * 28 * 1280 - 1))


def test_rounded_area_equal_to_a_limit_is_kept():
    # rounded to 28 x 112 = 3136 = max_pixels: no rescale (rescaling would give 28 x 84)
    check_close(*both("qwen_vl_tokens", 41, 100, 1, 3136))
    # rounded to 28 x 56 = 1568 = min_pixels: no rescale (rescaling would give 28 x 84)
    check_close(*both("qwen_vl_tokens", 20, 50, 1568, 10**6))


def test_one_pixel_budget():
    check_close(*both("qwen_vl_tokens", 28, 28, 1, 1))


def test_28_pixel_floor_when_scaling_down():
    check_close(*both("qwen_vl_tokens", 10, 2000, 1, 28 * 28 * 4))


def test_rounding_to_zero_takes_28():
    check_close(*both("qwen_vl_tokens", 13, 500, 1, 10**8))


def test_aspect_ratio_200_is_allowed():
    check_close(*both("qwen_vl_tokens", 10, 2000, *DEFAULT))


def test_tiles_low_detail():
    check_close(*both("tile_tokens", 4000, 3000, "low"))


def test_tiles_documented_square():
    check_close(*both("tile_tokens", 1024, 1024, "high"))
    check_close(*both("tile_tokens", 2048, 4096, "high"))


def test_tiles_small_images_not_enlarged():
    check_close(*both("tile_tokens", 300, 500, "high"))
    check_close(*both("tile_tokens", 512, 513, "high"))
    check_close(*both("tile_tokens", 513, 400, "high"))
    check_close(*both("tile_tokens", 1, 1, "high"))


def test_tiles_shortest_side_exactly_768():
    check_close(*both("tile_tokens", 768, 1600, "high"))
    check_close(*both("tile_tokens", 769, 1600, "high"))


def test_tiles_exact_fraction_boundary():
    # 3000 x 1000: the long side becomes exactly 2048 (4 tiles), not 2048.0000000000002 (5)
    check_close(*both("tile_tokens", 3000, 1000, "high"))
    check_close(*both("tile_tokens", 1000, 3000, "high"))
    check_close(*both("tile_tokens", 6000, 1536, "high"))


_rng = random.Random(155)
RANDOM = []
for _ in range(30):
    h = _rng.choice([_rng.randint(1, 300), _rng.randint(200, 5000), 28 * _rng.randint(1, 100)])
    w = min(max(1, _rng.choice([_rng.randint(1, 300), _rng.randint(200, 5000), 14 * _rng.randint(1, 200)])), 200 * h)
    h = min(h, 200 * w)
    lo = _rng.choice([1, 3136, 28 * 28 * 256])
    RANDOM.append((h, w, lo, _rng.choice([lo, 28 * 28 * 1280, 12845056])))


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    h, w, lo, hi = RANDOM[index]
    check_close(*both("qwen_vl_tokens", h, w, lo, hi))
    check_close(*both("tile_tokens", h, w, "high"))


# Cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("height", "qwen_vl_tokens", (10, 2001, *DEFAULT)),
    ("height", "qwen_vl_tokens", (2001, 10, *DEFAULT)),
    ("max_pixels", "qwen_vl_tokens", (100, 100, 3136, 3135)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
