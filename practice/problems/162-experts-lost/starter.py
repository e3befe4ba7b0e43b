"""162. GPU 故障时丢失的专家。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 162
"""


def lost_experts(gpu_experts, num_experts, failed):
    """Return {"lost": [experts with no replica left], "replicas_left": [count per expert]}."""
    raise NotImplementedError


def token_loss_share(num_experts, topk, lost):
    """Return the share of tokens that need at least one lost expert."""
    raise NotImplementedError


def loss_probability(gpu_experts, num_experts, failures):
    """Return the probability that `failures` random GPU failures lose at least one expert."""
    raise NotImplementedError
