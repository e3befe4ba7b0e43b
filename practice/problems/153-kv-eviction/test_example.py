"""The statement's worked example (153), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'run_eviction',
 'args': [[[1],
           [3, 1],
           [3, 1, 1],
           [3, 1, 1, 5],
           [3, 1, 1, 6, 1],
           [3, 1, 1, 6, 1, 2],
           [3, 1, 1, 7, 1, 1, 1]],
          4,
          'h2o',
          1],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'kept': [0, 1, 3, 6],
              'evicted': [2, 4, 5],
              'captured': [1.0, 1.0, 1.0, 1.0, 1.0, 0.9285714285714286, 0.8666666666666667]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
