"""152. 投机解码的拒绝采样验证（固定种子）。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 152
"""


def verify(p, q, draft, seed):
    """Return {"accepted": accepted draft tokens, "tokens": the tokens this round emits}."""
    raise NotImplementedError


def expected_accepted(p, q):
    """Expected number of accepted draft tokens: alpha_0 + alpha_0*alpha_1 + ... (a float)."""
    raise NotImplementedError
