"""135. 估算：张量并行的通信开销。

Write the three functions below; see problem.md for the rules, units and the worked example.
Judge with:  python practice/judge.py 135
"""


def allreduce_us(message_bytes, *, alpha_us, beta_gbs):
    """One all-reduce in microseconds: alpha_us + message_bytes / (beta_gbs * 1e9) s."""
    raise NotImplementedError


def tp_comm_ms(tokens, *, layers, hidden, tp, alpha_us, beta_gbs, activation_bytes=2):
    """Milliseconds of the step's 2 * layers all-reduces of tokens * hidden * activation_bytes
    bytes each; 0.0 when tp == 1."""
    raise NotImplementedError


def best_tp(tokens, *, weight_bytes, layers, hidden, gpu_bandwidth_gbs, gpu_memory_gb, measured,
            activation_bytes=2):
    """Return {"tp", "step_ms", "read_ms", "comm_ms"} for the tp (1 or one of measured's
    [tp, alpha_us, beta_gbs] entries) whose decode step is shortest."""
    raise NotImplementedError
