"""The statement's worked example (135), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "best_tp",
    "args": [64],
    "kwargs": {"weight_bytes": 141e9, "layers": 80, "hidden": 8192, "gpu_bandwidth_gbs": 3350,
               "gpu_memory_gb": 80, "measured": [[2, 2.718, 263.9], [4, 3.493, 162.1], [8, 4.37, 144.3]]},
    "rtol": 1e-9,
    "expected": {"tp": 8, "step_ms": 7.123056261312978, "read_ms": 5.2611940298507465,
                 "comm_ms": 1.8618622314622315},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
