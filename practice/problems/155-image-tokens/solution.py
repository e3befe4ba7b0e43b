"""Reference solution for 155: how many tokens an image costs: Qwen2-VL's dynamic resolution
(14-pixel patches merged 2 x 2, so one token per 28 x 28 pixels) and OpenAI's 512-pixel tiles."""
import math
import numbers
from fractions import Fraction

FACTOR = 28          # 14-pixel patches, 2 x 2 merged into one token
MAX_RATIO = 200


def _int(name, x, minimum):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def qwen_vl_tokens(height, width, min_pixels, max_pixels):
    """Qwen2-VL's smart resize: both sides to multiples of 28 (nearest, at least 28), then scaled
    down or up by the same factor when the area leaves [min_pixels, max_pixels]."""
    _int("height", height, 1)
    _int("width", width, 1)
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"height: the aspect ratio must be at most {MAX_RATIO}, got {height} x {width}")
    _int("min_pixels", min_pixels, 1)
    _int("max_pixels", max_pixels, 1)
    if max_pixels < min_pixels:
        raise ValueError(f"max_pixels must be at least the minimum ({min_pixels}), got {max_pixels}")
    h = max(FACTOR, round(height / FACTOR) * FACTOR)
    w = max(FACTOR, round(width / FACTOR) * FACTOR)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(FACTOR, math.floor(height / beta / FACTOR) * FACTOR)
        w = max(FACTOR, math.floor(width / beta / FACTOR) * FACTOR)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / FACTOR) * FACTOR
        w = math.ceil(width * beta / FACTOR) * FACTOR
    return {"height": h, "width": w, "tokens": (h // FACTOR) * (w // FACTOR)}


def tile_tokens(height, width, detail):
    """OpenAI's count (GPT-4o): "low" is 85 tokens; "high" fits the image in 2048 x 2048, scales
    the shortest side down to 768, and adds 170 tokens per 512 x 512 tile to the base 85."""
    _int("height", height, 1)
    _int("width", width, 1)
    if detail not in ("low", "high"):
        raise ValueError(f"detail must be 'low' or 'high', got {detail!r}")
    if detail == "low":
        return {"tiles": 0, "tokens": 85}
    scale = min(Fraction(1), Fraction(2048, max(height, width)))
    scale *= min(Fraction(1), Fraction(768) / (min(height, width) * scale))
    tiles = math.ceil(height * scale / 512) * math.ceil(width * scale / 512)
    return {"tiles": tiles, "tokens": 85 + 170 * tiles}
