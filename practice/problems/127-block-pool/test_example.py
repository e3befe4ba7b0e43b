"""The statement's worked example (127), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'run_block_pool',
 'args': [8, 4, [['alloc', 'A', 6], ['fork', 'A', 'B'], ['append', 'B', 3], ['free', 'A']]],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': [{'ok': True,
               'copies': 0,
               'free': 6,
               'table': [0, 1],
               'refs': [1, 1, 0, 0, 0, 0, 0, 0]},
              {'ok': True,
               'copies': 0,
               'free': 6,
               'table': [0, 1],
               'refs': [2, 2, 0, 0, 0, 0, 0, 0]},
              {'ok': True,
               'copies': 1,
               'free': 4,
               'table': [0, 2, 3],
               'refs': [2, 1, 1, 1, 0, 0, 0, 0]},
              {'ok': True, 'copies': 0, 'free': 5, 'table': [], 'refs': [1, 0, 1, 1, 0, 0, 0, 0]}]}


def test_worked_example():
    run_example(submission, EXAMPLE)
