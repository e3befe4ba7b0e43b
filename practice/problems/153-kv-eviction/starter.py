"""153. KV 驱逐：StreamingLLM 与 H2O。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 153
"""


def streaming_keep(seq_len, sink, window):
    """Return the sorted positions StreamingLLM keeps after seq_len tokens."""
    raise NotImplementedError


def run_eviction(scores, budget, policy, keep_recent):
    """Return {"kept": [...], "evicted": [...], "captured": [...]} for a run with a KV budget."""
    raise NotImplementedError
