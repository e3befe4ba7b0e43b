"""The statement's worked example (179), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'update_time',
 'args': [[3000000000, 2000000000, 4000000000, 1000000000, 6000000000, 2000000000],
          5000000000,
          50,
          200,
          0.01],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'buckets': 4, 'serial_s': 0.49000000000000005, 'pipelined_s': 0.41}}


def test_worked_example():
    run_example(submission, EXAMPLE)
