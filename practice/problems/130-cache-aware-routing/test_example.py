"""The statement's worked example (130), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'route_requests',
 'args': [[{'prompt': [1, 2, 3, 4, 5], 'hold': 5},
           {'prompt': [9, 9, 9], 'hold': 5},
           {'prompt': [1, 2, 3, 4, 6], 'hold': 5}],
          2],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': [0, 1, 0]}


def test_worked_example():
    run_example(submission, EXAMPLE)
