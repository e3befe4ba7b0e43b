"""The statement's worked example (176), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'pod_by_pod',
 'args': [[8, 8, 4],
          [{'name': 'a', 'pods': 3, 'gpus_per_pod': 4},
           {'name': 'b', 'pods': 3, 'gpus_per_pod': 4},
           {'name': 'c', 'pods': 2, 'gpus_per_pod': 2}]],
 'kwargs': {},
 'rtol': 0,
 'expected': {'placed': {'a': [2, 0, 0], 'b': [1, 1, None], 'c': [None, None]},
              'free': [0, 0, 0],
              'stranded': 8}}


def test_worked_example():
    run_example(submission, EXAMPLE)
