"""The statement's worked example (169), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "kv_bytes",
    "args": [1000000, [{"kind": "full", "count": 8, "bytes_per_token": 576},
                       {"kind": "sparse", "count": 8, "bytes_per_token": 576, "top_k": 2048,
                        "index_bytes_per_token": 128},
                       {"kind": "window", "count": 32, "bytes_per_token": 2048, "window": 4096}]],
    "kwargs": {},
    "rtol": 1e-9,
    "expected": {"stored_bytes": 10508435456.0, "read_bytes": 5909872640.0},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
