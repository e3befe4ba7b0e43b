"""171. 控制器的调和循环。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 171
"""


def reconcile(desired, observed):
    """Return {"create": how many new pods, "delete": sorted names of pods to delete}."""
    raise NotImplementedError


def converge(desired, observed, max_rounds):
    """Return {"rounds": rounds until nothing to do (-1 past max_rounds), "min_ready": int, "pods": sorted names}."""
    raise NotImplementedError
