"""``sim.result.step_starts``: each step's start rebuilt from the run-length log. The compiled loop
and the numpy one add the same durations in the same order, so they give the same floats; both
equal a plain running sum written out by hand."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import result


def plain_starts(run_start, count, duration):
    out, d = [], 0
    for s, k in zip(run_start, count):
        t = s
        for _ in range(k):
            out.append(t)
            t = t + duration[d]
            d += 1
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_compiled_and_numpy_starts_equal_the_plain_running_sum(data):
    count = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=30))
    run_start = np.cumsum(data.draw(st.lists(st.floats(0, 10), min_size=len(count), max_size=len(count))))
    duration = np.asarray(data.draw(st.lists(st.floats(1e-6, 1.0), min_size=sum(count), max_size=sum(count))))
    plain = plain_starts(run_start.tolist(), count, duration.tolist())
    saved = result.COMPILE_MIN_RUNS
    try:
        for threshold in (10**9, 1):           # the numpy loop, then the compiled one (if numba is here)
            result.COMPILE_MIN_RUNS = threshold
            assert result.step_starts(run_start, np.asarray(count), duration).tolist() == plain
    finally:
        result.COMPILE_MIN_RUNS = saved
