"""138. 专家并行的 dispatch 与 combine。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 138
"""


def dispatch(topk_ids, token_rank, num_experts, ep_size):
    """Return {"pairs": ep x ep, "copies": ep x ep, "recv": per rank [[token, slot], ...], "expert_load": [...]}."""
    raise NotImplementedError


def combine(received, topk_weights):
    """Return the combined output, one vector per token (tokens x hidden)."""
    raise NotImplementedError
