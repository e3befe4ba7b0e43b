"""151. 树形草稿。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 151
"""


def tree_attention(parents):
    """Return {"depth": [...], "mask": n x n list of 0/1}."""
    raise NotImplementedError


def verify_greedy(nodes, target):
    """Return {"accepted": [node indices], "tokens": [accepted tokens..., bonus token]}."""
    raise NotImplementedError


def best_tree(rank_probs, size):
    """Return {"parents": [...], "ranks": [...], "expected_tokens": float}."""
    raise NotImplementedError
