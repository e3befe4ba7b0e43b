"""The statement's worked example (139), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "min_microbatches",
    "args": [8, 0.1],
    "kwargs": {},
    "rtol": 1e-9,
    "expected": 63,
}


def test_worked_example():
    run_example(submission, EXAMPLE)
