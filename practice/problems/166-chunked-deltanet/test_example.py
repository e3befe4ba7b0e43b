"""The statement's worked example (166), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'delta_chunked',
 'args': [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
          [[1.0, 0.0], [0.6, 0.8], [1.0, 0.0]],
          [[2.0], [1.0], [3.0]],
          [1.0, 0.5, 1.0],
          2],
 'kwargs': {},
 'rtol': 1e-07,
 'atol': 1e-09,
 'expected': {'out': [[2.0], [-0.07999999999999999], [2.92]],
              'state': [[3.0, -0.07999999999999999]]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
