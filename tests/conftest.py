import sys
from pathlib import Path

# tests/reference.py (the plain loop) is imported by name from the tests.
sys.path.insert(0, str(Path(__file__).parent))

import pytest

TICK = 1 / 1024


def tiny_setup(kv=0, budget=4, seqs=8, cap=1000, overhead=0.0):
    """A step computing T tokens over C tokens of context lasts max(T, 2 + kv * C) ticks of 1/1024 s
    (exact in floating point): the hand-worked timelines' instance."""
    from sim import Setup
    return Setup(params=0.5, weight_bytes=2, kv_bytes_per_token=kv, kv_capacity_tokens=cap,
                 peak_flops=1024, bandwidth=1024, mfu=1.0, step_overhead=overhead,
                 max_num_batched_tokens=budget, max_num_seqs=seqs)


def ticks(values):
    return [None if v != v else round(v / TICK, 9) for v in values]


@pytest.fixture(scope="module", params=["compiled", "python"])
def engine_path(request):
    """Run a module's tests on each path of the engine: compiled (sim/_compiled.py) and pure Python.
    A module opts in with ``pytestmark = pytest.mark.usefixtures("engine_path")``."""
    from sim import engine
    if request.param == "compiled" and not engine.use_compiled(True):
        pytest.skip("numba is not installed: the compiled path is off")
    if request.param == "python":
        engine.use_compiled(False)
    yield request.param
    engine.use_compiled("auto")


@pytest.fixture
def tiny():
    return tiny_setup


@pytest.fixture(scope="session")
def chapter_like():
    """A small 8B-class instance: fast enough for fleet tests with hundreds of requests."""
    from sim import Setup
    return Setup(params=8e9, weight_bytes=16e9, kv_bytes_per_token=131072, kv_capacity_tokens=200_000,
                 peak_flops=989e12, bandwidth=3.35e12, mfu=0.5, step_overhead=1e-3,
                 max_num_batched_tokens=2048, max_num_seqs=64)
