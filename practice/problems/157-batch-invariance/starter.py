"""157. 批不变的推理。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 157
"""


def reduce_f32(values, splits):
    """Return the float32 sum of values split into `splits` chunks (as a Python float)."""
    raise NotImplementedError


def splits_for(batch, policy):
    """Return how many chunks the reduction is split into at this batch size."""
    raise NotImplementedError


def logits_by_batch(x, w, batch_sizes, policy):
    """Return {"logits": [row per batch size], "tokens": [greedy token per batch size], "max_abs_diff": float}."""
    raise NotImplementedError
