"""The statement's worked example (162), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'lost_experts',
 'args': [[[0, 1, 4], [2, 3, 5], [4, 5, 0], [6, 7, 2]], 8, [1]],
 'kwargs': {},
 'rtol': 0,
 'expected': {'lost': [3], 'replicas_left': [2, 1, 1, 0, 2, 1, 1, 1]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
