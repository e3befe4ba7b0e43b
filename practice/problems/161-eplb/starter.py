"""161. EPLB：复制热门专家并装箱。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 161
"""


def replicate(loads, num_redundant):
    """Return the number of replicas of each expert (a list of ints)."""
    raise NotImplementedError


def pack(weights, num_packs):
    """Return {"members": [[item indices] per pack], "totals": [weight per pack]}."""
    raise NotImplementedError


def place(loads, num_gpus, redundant_per_gpu):
    """Return {"gpu_experts": [[expert ids] per GPU], "gpu_load": [...], "imbalance": max / mean}."""
    raise NotImplementedError
