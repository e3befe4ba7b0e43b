"""The statement's worked example (150), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'best_draft_len',
 'args': [0.8, 0.05],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'k': 8, 'speedup': 3.0920795428571437}}


def test_worked_example():
    run_example(submission, EXAMPLE)
