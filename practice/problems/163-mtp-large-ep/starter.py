"""163. 估算：大规模 EP 下的 MTP。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 163
"""


def mtp_step_s(batch, depth, fixed_s, per_token_s, mtp_layer_frac):
    """Return the seconds of one decode step with `depth` MTP draft tokens per request."""
    raise NotImplementedError


def mtp_rate(batch, depth, alpha, fixed_s, per_token_s, mtp_layer_frac):
    """Return {"tpot_s": float, "tokens_per_s": float} (per GPU)."""
    raise NotImplementedError


def best_batch(tpot_slo_s, depth, alpha, fixed_s, per_token_s, mtp_layer_frac, max_batch):
    """Return {"batch": largest batch within the TPOT SLO or 0, "tokens_per_s": float}."""
    raise NotImplementedError
