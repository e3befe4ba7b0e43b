"""The statement's worked example (145), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'ep_ledger',
 'args': [128, 256, 8, 64, 8, 7168, 58, 1, 2, 160, 50],
 'kwargs': {},
 'rtol': 1e-09,
 'expected': {'nvlink_copies': 0.839535177224853,
              'rdma_copies': 6.716281417798824,
              'nvlink_bytes': 134028177.68454501,
              'rdma_bytes': 1072225421.4763601,
              'nvlink_s': 0.0008376761105284063,
              'rdma_s': 0.021444508429527203}}


def test_worked_example():
    run_example(submission, EXAMPLE)
