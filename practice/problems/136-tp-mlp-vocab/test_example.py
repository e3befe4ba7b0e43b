"""The statement's worked example (136), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'tp_mlp',
 'args': [[[1.0, -1.0]],
          [[1.0, 0.0, 2.0, -1.0], [0.0, 1.0, 1.0, 1.0]],
          [[1.0, 1.0, 0.5, 0.0], [0.0, -1.0, 1.0, 2.0]],
          [[1.0], [2.0], [-1.0], [0.5]],
          2],
 'kwargs': {},
 'rtol': 1e-09,
 'atol': 1e-12,
 'expected': {'partials': [[[-0.3447071068499755]], [[0.6039351333592375]]],
              'y': [[0.259228026509262]]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
