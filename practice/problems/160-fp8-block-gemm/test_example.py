"""The statement's worked example (160), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'block_matmul',
 'args': [[[0.3, -1.7, 2.2, 0.05], [100.0, 0.01, -3.0, 7.5]],
          [[1.0, 0.5], [-0.25, 2.0], [0.1, 0.0], [3.3, -1.0]],
          2],
 'kwargs': {},
 'rtol': 1e-09,
 'atol': 1e-12,
 'expected': {'c': [[1.1175, -3.294515306122449], [124.4437517438616, 42.94775390625]],
              'rel_error': 0.003252363008676925}}


def test_worked_example():
    run_example(submission, EXAMPLE)
