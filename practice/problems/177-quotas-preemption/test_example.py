"""The statement's worked example (177), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'schedule',
 'args': [8,
          {'A': 2, 'B': 6},
          [{'op': 'submit', 'job': 'a1', 'tenant': 'A', 'gpus': 4, 'priority': 0},
           {'op': 'submit', 'job': 'a2', 'tenant': 'A', 'gpus': 2, 'priority': 1},
           {'op': 'submit', 'job': 'b1', 'tenant': 'B', 'gpus': 2, 'priority': 0},
           {'op': 'submit', 'job': 'b2', 'tenant': 'B', 'gpus': 4, 'priority': 5},
           {'op': 'finish', 'job': 'a2'},
           {'op': 'submit', 'job': 'a3', 'tenant': 'A', 'gpus': 3, 'priority': 2}]],
 'kwargs': {},
 'rtol': 0,
 'expected': {'log': [['run', 'a1'],
                      ['run', 'a2'],
                      ['run', 'b1'],
                      ['preempt', 'a1'],
                      ['run', 'b2'],
                      ['finish', 'a2'],
                      ['wait', 'a3']],
              'running': ['b1', 'b2'],
              'pending': ['a3', 'a1']}}


def test_worked_example():
    run_example(submission, EXAMPLE)
