"""176. 成组调度与碎片。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 176
"""


def gang_schedule(nodes_free, jobs):
    """Return {"placed": {job: [node per pod] or None}, "free": [...]}."""
    raise NotImplementedError


def pod_by_pod(nodes_free, jobs):
    """Return {"placed": {job: [node or None per pod]}, "free": [...], "stranded": GPUs held by incomplete jobs}."""
    raise NotImplementedError


def fragmentation(free, size):
    """Return the share of the free GPUs that no pod of `size` GPUs can use."""
    raise NotImplementedError
