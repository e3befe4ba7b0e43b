"""177. 配额、优先级与抢占。

Write the function below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 177
"""


def schedule(capacity, quotas, events):
    """Return {"log": [[action, job], ...], "running": sorted job ids, "pending": the queue}."""
    raise NotImplementedError
