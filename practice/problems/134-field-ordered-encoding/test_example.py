"""The statement's worked example (134), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'encode',
 'args': [{'prompt': 'hi', 'max_tokens': 300, 'model': 'qwen', 'seed': 0},
          [{'name': 'prompt', 'number': 3, 'type': 'str'},
           {'name': 'model', 'number': 1, 'type': 'str'},
           {'name': 'max_tokens', 'number': 2, 'type': 'int'},
           {'name': 'seed', 'number': 4, 'type': 'int'}]],
 'kwargs': {},
 'rtol': 0,
 'expected': [10, 4, 113, 119, 101, 110, 16, 172, 2, 26, 2, 104, 105]}


def test_worked_example():
    run_example(submission, EXAMPLE)
