"""The statement's worked example (171), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'reconcile',
 'args': [{'replicas': 3, 'version': 'v2', 'max_surge': 1, 'max_unavailable': 0},
          [{'name': 'v1-0', 'version': 'v1', 'ready': True},
           {'name': 'v1-1', 'version': 'v1', 'ready': False},
           {'name': 'v1-2', 'version': 'v1', 'ready': True},
           {'name': 'v2-x', 'version': 'v2', 'ready': True}]],
 'kwargs': {},
 'rtol': 0,
 'expected': {'create': 0, 'delete': ['v1-1']}}


def test_worked_example():
    run_example(submission, EXAMPLE)
