"""The statement's worked example (149), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'memory_plan',
 'args': [70600000000.0, 80, 8, 128],
 'kwargs': {'weight_dtype': 'fp8',
            'kv_dtype': 'fp8',
            'gpus': 2,
            'gpu_mem_gb': 141,
            'reserve_gb': 3.0,
            'context_len': 8192},
 'rtol': 1e-09,
 'expected': {'weight_bytes': 70600000000.0,
              'kv_bytes_per_token': 163840.0,
              'kv_budget_bytes': 177200000000.0,
              'kv_tokens': 1081542,
              'max_batch': 132,
              'max_context': None}}


def test_worked_example():
    run_example(submission, EXAMPLE)
