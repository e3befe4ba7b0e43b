"""The statement's worked example (155), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'qwen_vl_tokens',
 'args': [1080, 1920, 3136, 1003520],
 'kwargs': {},
 'rtol': 0,
 'expected': {'height': 728, 'width': 1316, 'tokens': 1222}}


def test_worked_example():
    run_example(submission, EXAMPLE)
