"""165. PD 复用：在一张 GPU 上切分 SM。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 165
"""


def decode_step_s(gpu, model, decode_sms, batch, context):
    """Return the seconds of one decode step on decode_sms SMs."""
    raise NotImplementedError


def split_sms(gpu, model, batch, context, tpot_slo_s):
    """Return {"decode_sms": fewest SMs within the SLO or -1, "decode_step_s": float, "prefill_tokens_per_s": float}."""
    raise NotImplementedError
