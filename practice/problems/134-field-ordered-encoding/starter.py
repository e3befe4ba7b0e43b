"""134. 按字段号排序的消息编码。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 134
"""


def encode(message, schema):
    """Return the encoding as a list of bytes (integers 0..255)."""
    raise NotImplementedError


def decode(data, schema):
    """Return a dict with every schema field."""
    raise NotImplementedError


def shared_prefix(a, b):
    """Return how many leading bytes a and b have in common."""
    raise NotImplementedError
