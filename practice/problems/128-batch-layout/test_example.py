"""The statement's worked example (128), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'batch_layout',
 'args': [[{'seq': 'p', 'context': 4, 'new': 6, 'prompt_len': 10, 'blocks': [3, 7, 1]},
           {'seq': 'd', 'context': 6, 'new': 1, 'prompt_len': 5, 'blocks': [0, 2]}],
          4],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'order': ['d', 'p'],
              'num_decodes': 1,
              'query_start_loc': [0, 1, 7],
              'seq_lens': [7, 10],
              'positions': [6, 4, 5, 6, 7, 8, 9],
              'slot_mapping': [10, 28, 29, 30, 31, 4, 5],
              'logits_indices': [0, 6]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
