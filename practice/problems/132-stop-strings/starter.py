"""132. 流式输出里的停止串。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 132
"""


def holdback(text, stops):
    """Return the length of the longest suffix of text that is a proper prefix of a stop string."""
    raise NotImplementedError


def stream(pieces, stops, include_stop=False):
    """Return {"chunks": [text released after each token], "stop": index or -1, "tokens": consumed}."""
    raise NotImplementedError
