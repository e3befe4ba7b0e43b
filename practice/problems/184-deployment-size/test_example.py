"""The statement's worked example (184), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "plan",
    "args": [200, 2000, 500, 50],
    "kwargs": {"params": 70e9, "weight_bytes": 140e9, "kv_bytes_per_token": 327680,
               "gpus_per_instance": 8, "gpu_mem_gb": 80, "gpu_bandwidth_gbs": 3350, "gpu_tflops": 989},
    "rtol": 1e-6,
    "expected": {"batch": 547, "bound": "kv", "step_ms": 20.27209552238806,
                 "decode_rps": 53.96580727393526, "decode_instances": 5,
                 "prefill_rps": 11.302857142857142, "prefill_instances": 24, "gpus": 232},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
