"""The statement's worked example (161), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'place',
 'args': [[900, 300, 100, 100, 600, 200, 150, 50], 4, 1],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'gpu_experts': [[1, 0, 3], [4, 0, 7], [4, 5, 2], [0, 0, 6]],
              'gpu_load': [625.0, 575.0, 600.0, 600.0],
              'imbalance': 1.0416666666666667}}


def test_worked_example():
    run_example(submission, EXAMPLE)
