"""The statement's worked example (142), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'copy_plan',
 'args': [[[12, 3], [13, 4], [14, 5], [15, 9], [40, 10], [41, 11], [7, 12]], 16384, 1],
 'kwargs': {},
 'rtol': 0,
 'expected': [[212992, 65536, 32768],
              [245760, 147456, 16384],
              [655360, 163840, 32768],
              [114688, 196608, 16384]]}


def test_worked_example():
    run_example(submission, EXAMPLE)
