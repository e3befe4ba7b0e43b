"""The statement's worked example (152), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'verify',
 'args': [[[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6]],
          [[0.3, 0.5, 0.2], [0.25, 0.25, 0.5]],
          [1, 2],
          8],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'accepted': 1, 'tokens': [1, 0]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
