"""The statement's worked example (164), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'route_stream',
 'args': [[{'arrival_s': 0.0, 'input_len': 2000},
           {'arrival_s': 0.1, 'input_len': 6000},
           {'arrival_s': 0.2, 'input_len': 3000},
           {'arrival_s': 0.25, 'input_len': 8000}],
          [{'queued_tokens': 4000, 'step_left_s': 0.02, 's_per_token': 0.0001},
           {'queued_tokens': 0, 'step_left_s': 0.03, 's_per_token': 0.0002},
           {'queued_tokens': 12000, 'step_left_s': 0.01, 's_per_token': 0.0001}],
          1.0],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'instance': [1, 0, 1, -1],
              'ttft_s': [0.43000000000000005, 0.92, 0.8300000000000001, 1.57],
              'rejected': 1}}


def test_worked_example():
    run_example(submission, EXAMPLE)
