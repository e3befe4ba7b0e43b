"""The statement's worked example (163), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'best_batch',
 'args': [0.025, 1, 0.85, 0.015, 0.0001, 0.01639344262295082, 512],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'batch': 152, 'tokens_per_s': 6093.932073326702}}


def test_worked_example():
    run_example(submission, EXAMPLE)
