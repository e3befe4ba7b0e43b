"""The statement's worked example (148), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'overlap_timeline',
 'args': [[10.0, 10.0, 10.0], [4.0, 4.0, 4.0], True],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'gpu_start_ms': [4.0, 14.0, 24.0], 'total_ms': 34.0, 'gpu_idle_ms': 4.0}}


def test_worked_example():
    run_example(submission, EXAMPLE)
