"""181. 多 LoRA 的批处理。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 181
"""


def lora_forward(x, w, adapters, adapter_ids):
    """Return y (tokens x d_out): the base output plus each token's own LoRA update."""
    raise NotImplementedError


def segments(adapter_ids):
    """Return {"order": token indices grouped by adapter, "segments": [[adapter, start, end], ...]}."""
    raise NotImplementedError


def lora_flops(adapter_ids, ranks, d_in, d_out):
    """Return {"base": int, "lora": int, "overhead": lora / base}."""
    raise NotImplementedError
