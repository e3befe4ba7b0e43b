"""136. 张量并行的 MLP 与按词表切分的嵌入。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 136
"""


def tp_mlp(x, w_gate, w_up, w_down, tp):
    """Return {"partials": [each rank's partial output], "y": their sum}."""
    raise NotImplementedError


def vocab_embedding(ids, table, tp):
    """Return {"partials": [each rank's lookup], "out": their sum}."""
    raise NotImplementedError


def parallel_argmax(hidden, lm_head, tp):
    """Return {"local": per rank, per row [best logit or None, global id or -1], "tokens": [...]}."""
    raise NotImplementedError
