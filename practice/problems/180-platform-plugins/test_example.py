"""The statement's worked example (180), and nothing else."""
import submission
from judgekit import run_example

EXAMPLE = {'function': 'resolve_platform',
 'args': [[{'name': 'tpu', 'returns': None, 'raises': False},
           {'name': 'cuda', 'returns': 'vllm.platforms.cuda.CudaPlatform', 'raises': False},
           {'name': 'rocm', 'returns': None, 'raises': False}],
          [{'name': 'ascend', 'returns': 'vllm_ascend.platform.NPUPlatform', 'raises': False},
           {'name': 'broken', 'returns': 'x.Y', 'raises': True}],
          None],
 'kwargs': {},
 'rtol': 0,
 'expected': {'platform': 'vllm_ascend.platform.NPUPlatform',
              'source': 'plugin',
              'activated': ['ascend'],
              'error': False}}


def test_worked_example():
    run_example(submission, EXAMPLE)
