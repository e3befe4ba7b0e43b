"""The statement's worked example (143), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'run_two_tier',
 'args': [2, 1, [1, 2, 3, 1]],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': [{'where': 'miss', 'dropped': None, 'gpu': [1], 'cpu': []},
              {'where': 'miss', 'dropped': None, 'gpu': [1, 2], 'cpu': []},
              {'where': 'miss', 'dropped': None, 'gpu': [2, 3], 'cpu': [1]},
              {'where': 'cpu', 'dropped': None, 'gpu': [3, 1], 'cpu': [2]}]}


def test_worked_example():
    run_example(submission, EXAMPLE)
