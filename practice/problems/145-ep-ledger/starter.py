"""145. 专家并行通信的账本。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 145
"""


def group_hit_prob(num_experts, topk, groups):
    """Return the probability that one given group of experts gets at least one of a token's experts."""
    raise NotImplementedError


def ep_ledger(tokens_per_gpu, num_experts, topk, gpus, gpus_per_node, hidden, moe_layers,
              dispatch_bytes, combine_bytes, nvlink_gbs, rdma_gbs):
    """Return the copies, bytes and seconds per decode step and GPU over NVLink and RDMA (a dict)."""
    raise NotImplementedError
