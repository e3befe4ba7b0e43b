"""The statement's worked example (154), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'constrained_greedy',
 'args': [{'transitions': {'s': {'t': 't1', 'f': 'f1'},
                           't1': {'r': 't2'},
                           't2': {'u': 't3'},
                           't3': {'e': 'done'},
                           'f1': {'a': 'f2'},
                           'f2': {'l': 'f3'},
                           'f3': {'s': 'f4'},
                           'f4': {'e': 'done'},
                           'done': {}},
           'accept': ['done']},
          's',
          ['true', 'tr', 'ue', 'fa', 'lse', 'yes', 't', 'e', ' '],
          [[0.1, 0.5, 0, 0.2, 0, 3.0, 0.4, 0, 0, 1.0],
           [0, 0, 2.0, 0, 0, 0, 0, 0, 0, 5.0],
           [0, 0, 0, 0, 0, 0, 0, 0, 0, 1.0]]],
 'kwargs': {},
 'rtol': 0,
 'expected': {'tokens': [1, 2], 'text': 'true', 'state': 'done', 'finished': True, 'stuck': False}}


def test_worked_example():
    run_example(submission, EXAMPLE)
