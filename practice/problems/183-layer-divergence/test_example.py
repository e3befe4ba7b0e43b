"""The statement's worked example (183), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'first_divergence',
 'args': [[[1.0, 2.0], [0.5, -1.0], [3.0, 0.0], [0.0, 0.0]],
          [[1.0, 2.0], [0.5001, -1.0], [2.0, 1.0], [0.0, 0.1]],
          0.001],
 'kwargs': {},
 'rtol': 1e-09,
 'atol': 1e-12,
 'expected': {'layer': 2, 'rel_error': 0.47140452079103173}}


def test_worked_example():
    run_example(submission, EXAMPLE)
