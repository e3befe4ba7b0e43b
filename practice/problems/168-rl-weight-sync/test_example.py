"""The statement's worked example (168), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "sync_s",
    "args": [671e9, 16],
    "kwargs": {"mode": "push", "sender_gbs": 800, "receiver_gbs": 400, "latency_s": 0.01},
    "rtol": 1e-9,
    "expected": 13.43,
}


def test_worked_example():
    run_example(submission, EXAMPLE)
