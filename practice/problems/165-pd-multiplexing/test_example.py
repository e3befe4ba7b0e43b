"""The statement's worked example (165), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'split_sms',
 'args': [{'sms': 132,
           'peak_flops': 989000000000000.0,
           'bandwidth': 3350000000000.0,
           'bw_sat_sms': 44,
           'mfu': 0.5,
           'step_overhead': 0.0005},
          {'params': 8000000000.0, 'weight_bytes': 16000000000.0, 'kv_bytes_per_token': 131072},
          128,
          128000,
          0.03],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'decode_sms': 19,
              'decode_step_s': 0.02927292320791868,
              'prefill_tokens_per_s': 26457.623106060604}}


def test_worked_example():
    run_example(submission, EXAMPLE)
