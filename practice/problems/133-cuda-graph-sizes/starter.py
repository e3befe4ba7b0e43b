"""133. 选择 CUDA Graph 的捕获尺寸。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 133
"""


def padding_waste(batches, sizes, eager_cost):
    """Return {"padded_slots": int, "eager_steps": int, "waste": float mean slots wasted per step}."""
    raise NotImplementedError


def choose_sizes(batches, max_graphs, eager_cost):
    """Return {"sizes": at most max_graphs sorted capture sizes with the least waste, "waste": float}."""
    raise NotImplementedError
