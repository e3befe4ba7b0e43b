"""160. FP8 分块缩放的矩阵乘。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 160
"""


def to_e4m3(values):
    """Return each value rounded to the nearest FP8 E4M3 number (a list of floats)."""
    raise NotImplementedError


def quantize(matrix, block_rows, block_cols):
    """Return {"q": values on the E4M3 grid, "scales": one scale per tile}."""
    raise NotImplementedError


def block_matmul(a, b, block):
    """Return {"c": the block-scaled FP8 product, "rel_error": its error against a @ b}."""
    raise NotImplementedError
