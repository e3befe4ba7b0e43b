"""The statement's worked example (173), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "choose_profile",
    "args": [20],
    "kwargs": {"weight_bytes": 8e9, "kv_bytes_per_token": 65536, "context": 4096, "concurrency": 8,
               "params": 8e9, "input_len": 2000, "tpot_ms": 50, "ttft_ms": 1000},
    "rtol": 1e-9,
    "expected": {"profile": "1g.20gb", "gpus": 5},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
