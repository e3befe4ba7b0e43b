"""The statement's worked example (126), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'summarize',
 'args': [[{'arrival': 0.0, 'token_times': [0.2, 0.24, 0.28, 0.33]},
           {'arrival': 0.1, 'token_times': [0.7, 0.76, 0.81]},
           {'arrival': 0.5, 'token_times': [0.9]}],
          0.5,
          0.05],
 'kwargs': {'p': 90},
 'rtol': 1e-09,
 'expected': {'ttft_p': 0.6,
              'tpot_p': 0.05500000000000005,
              'itl_p': 0.06000000000000005,
              'slo_ok': 0.6666666666666666,
              'goodput': 2.2222222222222223}}


def test_worked_example():
    run_example(submission, EXAMPLE)
