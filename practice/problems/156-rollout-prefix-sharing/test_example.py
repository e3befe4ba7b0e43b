"""The statement's worked example (156), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'group_kv_blocks',
 'args': [1000, [300, 2000, 50, 900], 16],
 'kwargs': {},
 'rtol': 0,
 'expected': {'shared': 269, 'unshared': 455}}


def test_worked_example():
    run_example(submission, EXAMPLE)
