"""The statement's worked example (132), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'stream',
 'args': [['The answer', ' is 42', '.\n', '\nUs', 'er:', ' next'], ['\n\nUser:', '</s>']],
 'kwargs': {'include_stop': False},
 'rtol': 0,
 'expected': {'chunks': ['The answer', ' is 42', '.', '', ''], 'stop': 0, 'tokens': 5}}


def test_worked_example():
    run_example(submission, EXAMPLE)
