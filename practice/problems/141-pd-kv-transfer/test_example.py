"""The statement's worked example (141), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "exposed_s",
    "args": [2000, 327680, 0.25, 80],
    "kwargs": {},
    "rtol": 1e-9,
    "expected": 0.00116384,
}


def test_worked_example():
    run_example(submission, EXAMPLE)
