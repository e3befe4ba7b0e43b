"""The statement's worked example (172), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'schedule',
 'args': [[{'name': 'n1', 'gpus': 8, 'gpu_type': 'H100'},
           {'name': 'n2', 'gpus': 8, 'gpu_type': 'H100'},
           {'name': 'n3', 'gpus': 4, 'gpu_type': 'L40S'}],
          [{'name': 'p1', 'gpus': 2, 'gpu_type': None},
           {'name': 'p2', 'gpus': 4, 'gpu_type': 'H100'},
           {'name': 'p3', 'gpus': 2, 'gpu_type': None},
           {'name': 'p4', 'gpus': 8, 'gpu_type': 'H100'}],
          'spread'],
 'kwargs': {},
 'rtol': 0,
 'expected': {'assignment': {'p1': 'n1', 'p2': 'n2', 'p3': 'n1', 'p4': None},
              'free': {'n1': 4, 'n2': 4, 'n3': 4}}}


def test_worked_example():
    run_example(submission, EXAMPLE)
