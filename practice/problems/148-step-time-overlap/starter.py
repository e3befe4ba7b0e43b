"""148. 一步的时间拆解与重叠调度。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 148
"""

def step_breakdown(tokens, context, setup):
    """The terms of one step's time (seconds) under the course's roofline."""
    raise NotImplementedError


def overlap_timeline(gpu_ms, cpu_ms, overlap):
    """GPU start times, total time and GPU idle time of a run of steps, with or without overlap."""
    raise NotImplementedError
