"""The statement's worked example (138), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'dispatch',
 'args': [[[1, 6], [2, 3], [7, 4], [0, 5]], [0, 0, 1, 1], 8, 4],
 'kwargs': {},
 'rtol': 0,
 'expected': {'pairs': [[1, 2, 0, 1], [1, 0, 2, 1], [0, 0, 0, 0], [0, 0, 0, 0]],
              'copies': [[1, 1, 0, 1], [1, 0, 2, 1], [0, 0, 0, 0], [0, 0, 0, 0]],
              'recv': [[[0, 0], [3, 0]], [[1, 0], [1, 1]], [[2, 1], [3, 1]], [[0, 1], [2, 0]]],
              'expert_load': [1, 1, 1, 1, 1, 1, 1, 1]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
