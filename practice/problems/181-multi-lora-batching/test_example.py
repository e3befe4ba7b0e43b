"""The statement's worked example (181), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'lora_forward',
 'args': [[[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]],
          [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]],
          [{'a': [[1.0], [0.0]], 'b': [[2.0, 0.0, 0.0]], 'alpha': 1},
           {'a': [[0.0, 1.0], [1.0, 0.0]], 'b': [[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]], 'alpha': 4}],
          [1, -1, 0]],
 'kwargs': {},
 'rtol': 1e-09,
 'atol': 1e-12,
 'expected': [[5.0, 6.0, 5.0], [0.5, -1.0, 1.5], [6.0, 0.0, 2.0]]}


def test_worked_example():
    run_example(submission, EXAMPLE)
