"""The statement's worked example (140), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'merge_partials',
 'args': [[[[1.0, 2.0], [0.0, 1.0]], [[3.0, 0.0], [2.0, 2.0]]], [[1.0, 0.5], [2.0, 0.5]]],
 'kwargs': {},
 'rtol': 1e-07,
 'atol': 1e-09,
 'expected': {'out': [[2.4621171572600096, 0.5378828427399902], [1.0, 1.5]],
              'lse': [2.313261687518223, 1.1931471805599454]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
