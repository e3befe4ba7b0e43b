"""The statement's worked example (151), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'best_tree',
 'args': [[0.5, 0.25, 0.125], 6],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'parents': [-1, 0, -1, 1, 0, 2],
              'ranks': [0, 0, 1, 0, 1, 0],
              'expected_tokens': 2.375}}


def test_worked_example():
    run_example(submission, EXAMPLE)
