"""The statement's worked example (158), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "crossover_query_tokens",
    "args": [4096],
    "kwargs": {"heads": 128, "kv_rank": 512, "nope_dim": 128, "rope_dim": 64, "v_dim": 128},
    "rtol": 1e-9,
    "expected": 164,
}


def test_worked_example():
    run_example(submission, EXAMPLE)
