"""139. 估算：流水线并行的气泡。

Write the four functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 139
"""
import math


def bubble_fraction(stages, microbatches):
    """(stages - 1) / (microbatches + stages - 1)."""
    raise NotImplementedError


def pipeline_ms(stages, microbatches, stage_ms, *, p2p_ms=0.0):
    """(microbatches + stages - 1) * stage_ms + (stages - 1) * p2p_ms."""
    raise NotImplementedError


def min_microbatches(stages, max_bubble):
    """The smallest microbatches >= 1 with bubble_fraction(stages, microbatches) <= max_bubble."""
    raise NotImplementedError


def pp_decode(stages, groups, stage_ms):
    """Return {"tpot_ms", "utilization", "group_steps_per_s"}."""
    raise NotImplementedError
