"""174. 探针与优雅停机。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 174
"""


def startup(load_s, initial_delay_s, period_s, failure_threshold):
    """Return {"ready_s": float or None, "killed_s": float or None}."""
    raise NotImplementedError


def shutdown(requests, sigterm_s, lb_delay_s, grace_s, accept_after_sigterm):
    """Return {"completed": int, "cut": int, "refused": int, "rerouted": int}."""
    raise NotImplementedError
