"""The statement's worked example (175), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "scale_out",
    "args": [200, 0.5],
    "kwargs": {"per_instance_qps": 12, "instances_now": 17, "interval_s": 30, "cold_start_s": 70.08571428571429},
    "rtol": 1e-9,
    "expected": {"lead_s": 100.08571428571429, "qps_at_ready": 250.04285714285714, "instances_needed": 21,
                 "warm_spares": 4},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
