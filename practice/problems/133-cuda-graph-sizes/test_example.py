"""The statement's worked example (133), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'choose_sizes',
 'args': [[1, 2, 3, 3, 4, 6, 7, 7, 8, 8, 8, 12, 13, 16, 20], 3, 6],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'sizes': [3, 8, 13], 'waste': 1.6}}


def test_worked_example():
    run_example(submission, EXAMPLE)
