"""156. RL rollout 的前缀共享。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 156
"""


def group_kv_blocks(prompt_len, output_lens, block_size):
    """Return {"shared": blocks with the prompt shared, "unshared": blocks without sharing}."""
    raise NotImplementedError


def rollout_prefill_tokens(prompt_lens, n, block_size):
    """Return {"without_cache": int, "with_cache": int, "saved_fraction": float}."""
    raise NotImplementedError
