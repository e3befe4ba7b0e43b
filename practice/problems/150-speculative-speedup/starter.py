"""150. 估算：投机解码的加速比。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 150
"""


def expected_tokens(alpha, k):
    """Expected tokens per verification step with draft length k: 1 + alpha + ... + alpha**k."""
    raise NotImplementedError


def speedup(alpha, k, c):
    """expected_tokens(alpha, k) / (k * c + 1)."""
    raise NotImplementedError


def best_draft_len(alpha, c, k_max=16):
    """Return {"k": best draft length in 1..k_max, "speedup": its speedup}."""
    raise NotImplementedError
