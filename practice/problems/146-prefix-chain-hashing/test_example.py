"""The statement's worked example (146), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'chain_hashes',
 'args': [[1, 2, 3, 4, 5], 2],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': [589729691727335466, 13725386680924731485]}


def test_worked_example():
    run_example(submission, EXAMPLE)
