"""The statement's worked example (178), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "plan_update",
    "args": [16, 160, 12],
    "kwargs": {"weight_bytes": 70.6e9, "source": "network_storage", "drain_s": 30, "init_s": 60},
    "rtol": 1e-9,
    "expected": {"max_unavailable": 2, "per_wave": 2, "waves": 8, "wave_s": 146.48, "duration_s": 1171.84,
                 "peak_instances": 16},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
