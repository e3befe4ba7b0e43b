"""170. 自适应验证：按负载调草稿长度。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 170
"""


def spec_step_s(setup, batch, context, k, draft_cost):
    """Return the seconds of one speculative decode step."""
    raise NotImplementedError


def best_k(setup, batch, context, alpha, draft_cost, k_max):
    """Return {"k": best draft length (0 = off), "tokens_per_s": float, "speedup": float}."""
    raise NotImplementedError


def estimate_alpha(observations, prior_alpha, prior_weight, decay):
    """Return the estimated acceptance rate after each observation (a list of floats)."""
    raise NotImplementedError
