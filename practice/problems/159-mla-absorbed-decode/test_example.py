"""The statement's worked example (159), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'mla_absorb',
 'args': [[[1.0, 0.0], [0.5, -1.0]],
          [[1.0], [0.0]],
          [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
          [[0.0], [1.0], [-1.0]],
          [[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [-1.0, 0.0]]],
          [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, -1.0]]]],
 'kwargs': {},
 'rtol': 1e-07,
 'atol': 1e-09,
 'expected': {'q_latent': [[1.0, 0.0], [-0.25, -0.5]],
              'o_latent': [[0.6095860543932106, 0.6095860543932106],
                           [0.6689694834828108, 0.6175690426396572]],
              'out': [[0.6095860543932106, 0.6095860543932106],
                      [1.3379389669656216, -0.6175690426396572]]}}


def test_worked_example():
    run_example(submission, EXAMPLE)
