"""The statement's worked example (170), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'best_k',
 'args': [{'params': 8000000000.0,
           'weight_bytes': 16000000000.0,
           'kv_bytes_per_token': 131072,
           'peak_flops': 989000000000000.0,
           'bandwidth': 3350000000000.0,
           'mfu': 0.5,
           'step_overhead': 0.0005},
          128,
          64000,
          0.6,
          0.05,
          8],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'k': 1, 'tokens_per_s': 22328.526623461818, 'speedup': 1.3571874186834711}}


def test_worked_example():
    run_example(submission, EXAMPLE)
