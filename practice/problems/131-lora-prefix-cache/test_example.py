"""The statement's worked example (131), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'run_prefix_cache',
 'args': [4,
          2,
          [{'adapter': 'sql', 'tokens': [1, 2, 3, 4, 5]},
           {'adapter': 'sql', 'tokens': [1, 2, 3, 4, 9, 9]},
           {'adapter': 'chat', 'tokens': [1, 2, 3, 4]}]],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': [{'hit_tokens': 0, 'evicted': 0, 'cached_blocks': 2},
              {'hit_tokens': 4, 'evicted': 0, 'cached_blocks': 3},
              {'hit_tokens': 0, 'evicted': 1, 'cached_blocks': 4}]}


def test_worked_example():
    run_example(submission, EXAMPLE)
