"""The statement's worked example (167), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'min_gpus',
 'args': [405000000000.0, 'int4', 80],
 'kwargs': {'kv_reserve_gb': 100.0},
 'rtol': 1e-09,
 'expected': 8}


def test_worked_example():
    run_example(submission, EXAMPLE)
