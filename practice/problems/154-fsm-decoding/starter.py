"""154. 用有限状态机约束解码。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 154
"""


def token_mask(dfa, state, vocab):
    """Return len(vocab) + 1 zeros and ones (the last one is end of sequence)."""
    raise NotImplementedError


def constrained_greedy(dfa, state, vocab, logits):
    """Return {"tokens": [...], "text": str, "state": str, "finished": bool, "stuck": bool}."""
    raise NotImplementedError
