"""The statement's worked example (147), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'max_qps_under_slo',
 'args': [[4, 8, 12, 16, 20],
          [0.35, 0.42, 0.61, 1.4, 5.2],
          [0.021, 0.026, 0.034, 0.046, 0.071],
          2.0,
          0.05],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': 16.63157894736842}


def test_worked_example():
    run_example(submission, EXAMPLE)
