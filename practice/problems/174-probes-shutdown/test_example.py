"""The statement's worked example (174), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'shutdown',
 'args': [[{'arrival_s': 0, 'duration_s': 20},
           {'arrival_s': 5, 'duration_s': 40},
           {'arrival_s': 9, 'duration_s': 3},
           {'arrival_s': 10, 'duration_s': 5},
           {'arrival_s': 11, 'duration_s': 30},
           {'arrival_s': 12, 'duration_s': 2},
           {'arrival_s': 14, 'duration_s': 1},
           {'arrival_s': 15, 'duration_s': 1}],
          10,
          5,
          30,
          True],
 'kwargs': {},
 'rtol': 0,
 'expected': {'completed': 5, 'cut': 2, 'refused': 0, 'rerouted': 1}}


def test_worked_example():
    run_example(submission, EXAMPLE)
