"""The statement's worked example (182), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'decode_tokens_per_s',
 'args': [3200000000.0, 4.5, 4096, 114688, 51.2, 0.7],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': 15.790201458157432}


def test_worked_example():
    run_example(submission, EXAMPLE)
