"""155. 一张图片要多少 token。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 155
"""


def qwen_vl_tokens(height, width, min_pixels, max_pixels):
    """Return {"height": resized height, "width": resized width, "tokens": int}."""
    raise NotImplementedError


def tile_tokens(height, width, detail):
    """Return {"tiles": int, "tokens": int}."""
    raise NotImplementedError
