"""The statement's worked example (144), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "choose_allreduce",
    "args": [1048576, 8],
    "kwargs": {"alpha_us": 2.0, "link_gbs": 450, "topology": "switch"},
    "rtol": 1e-9,
    "expected": {"algorithm": "two_shot", "time_us": 8.077795555555555},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
