"""182. 估算：端侧 decode。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 182
"""


def memory_plan(params, weight_bits, context, kv_bytes_per_token, ram_gb, reserved_gb):
    """Return {"model_gb", "kv_gb", "free_gb", "fits"}."""
    raise NotImplementedError


def decode_tokens_per_s(params, weight_bits, context, kv_bytes_per_token, bandwidth_gbs, efficiency):
    """Return the decode speed in tokens per second."""
    raise NotImplementedError


def prefill_s(prompt_tokens, params, tops, utilization):
    """Return the seconds to prefill the prompt."""
    raise NotImplementedError
