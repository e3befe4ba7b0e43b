"""The statement's worked example (129), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'schedule_step',
 'args': [[{'id': 0, 'input_len': 5, 'output_len': 4, 'prompt_done': 5, 'generated': 2},
           {'id': 1, 'input_len': 12, 'output_len': 3, 'prompt_done': 2, 'generated': 0}],
          [{'id': 2, 'input_len': 6, 'output_len': 2}],
          24,
          {'max_num_batched_tokens': 8, 'max_num_seqs': 4, 'kv_capacity_tokens': 40}],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'work': [[0, 1], [1, 7]],
              'admitted': [],
              'tokens': 8,
              'context': 9,
              'pairs': 42,
              'kv_used': 24}}


def test_worked_example():
    run_example(submission, EXAMPLE)
