"""172. 一个迷你 GPU 调度器。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 172
"""


def schedule(nodes, pods, strategy):
    """Return {"assignment": {pod: node name or None}, "free": {node: free GPUs}}."""
    raise NotImplementedError


def still_fits(free, sizes):
    """Return, for each size, how many more pods of that size would fit."""
    raise NotImplementedError
