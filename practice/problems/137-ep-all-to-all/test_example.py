"""The statement's worked example (137), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {
    "function": "ep_step",
    "args": [128],
    "kwargs": {"hidden": 7168, "moe_layers": 58, "experts": 256, "nodes": 8, "top_k": 8, "max_nodes": 4,
               "nic_gbs": 50},
    "rtol": 1e-9,
    "expected": {"nodes_reached": 3.9830818109152806, "remote_nodes": 3.4851965845508706,
                 "bytes_per_layer": 9593045.421335286, "ms_per_step": 11.127932688748931},
}


def test_worked_example():
    run_example(submission, EXAMPLE)
