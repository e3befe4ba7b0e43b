"""The statement's worked example (157), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'logits_by_batch',
 'args': [[100000000.0, 1.0, -100000000.0, 1.0],
          [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.5]],
          [1, 8, 64],
          'split_k'],
 'kwargs': {},
 'rtol': 0,
 'expected': {'logits': [[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]],
              'tokens': [0, 1, 0],
              'max_abs_diff': 1.0}}


def test_worked_example():
    run_example(submission, EXAMPLE)
