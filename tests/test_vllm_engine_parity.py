"""The fast engine against the plain vLLM V1 reference (tests/vllm_reference.py), bit for bit.

``vllm_reference.engine_mismatches(result, reference)`` lists where an engine run differs
(per-request times, preemptions, prefix hits, and the step log). The cases here are those where
vLLM's rule and the handbook's coincide (KV never short, no prefix cache), which the engine must
keep; the vLLM-specific cases (per-chunk allocation, watermark only while others run, blocks
shared as soon as scheduled, priority, speculative decoding with paged KV) are added by the
engine's V1 work (issue 17 item 2), with the same helper.
"""

import random

import pytest

from conftest import tiny_setup
from sim import engine
from sim.kv import Paged
from vllm_reference import engine_mismatches, vllm_run

pytestmark = pytest.mark.usefixtures("engine_path")


@pytest.mark.parametrize("seed", range(12))
def test_engine_matches_reference_when_kv_is_ample(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    inputs = [rng.randint(1, 60) for _ in range(n)]
    outputs = [rng.randint(1, 40) for _ in range(n)]
    arrivals = sorted(rng.uniform(0, 0.08) for _ in range(n))
    setup = tiny_setup(kv=rng.choice([0, 1]), budget=rng.choice([8, 16, 64]), seqs=rng.choice([1, 3, 8]),
                       cap=200_000).replace(kv=Paged(block_size=rng.choice([1, 4, 16]), watermark=0.0))
    ref = vllm_run(setup, arrivals, inputs, outputs)
    assert engine_mismatches(engine.run_requests(setup, arrivals, inputs, outputs), ref) == []


def test_mismatches_name_the_first_difference():
    """The helper reports a changed time with its field and index."""
    setup = tiny_setup(budget=16, cap=1000).replace(kv=Paged(block_size=4, watermark=0.0))
    ref = vllm_run(setup, [0.0, 0.0], [8, 8], [3, 3])
    res = engine.run_requests(setup, [0.0, 0.0], [8, 8], [3, 3])
    assert engine_mismatches(res, ref) == []
    ref.reqs[1].finish += 1.0
    (msg,) = engine_mismatches(res, ref)
    assert msg.startswith("finish[1]: engine")
