"""The fidelity terms: per-token communication time and the serialized KV read, kept exact against
the plain loop."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import check_against_reference, reference_run
from sim import Setup, presets, run, simulate, workload
from sim.sweep import sweep

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(comm=st.sampled_from([0.0, 1e-7, 1e-5, 3.3e-4]), serial=st.sampled_from([0.0, 0.3, 1.0]),
       ratio=st.sampled_from([1.0, 0.65, 1.3]),
       n=st.integers(1, 25), seed=st.integers(0, 99), budget=st.integers(1, 64), seqs=st.integers(1, 10),
       load=st.floats(0.01, 50), closed=st.booleans())
def test_fidelity_terms_match_reference(comm, serial, ratio, n, seed, budget, seqs, load, closed):
    # kv_bytes_per_token is large enough that the KV read matters next to the weights.
    setup = Setup(params=1e9, weight_bytes=1e9, kv_bytes_per_token=4e6, kv_capacity_tokens=600,
                  peak_flops=1e14, bandwidth=1e12, step_overhead=1e-4, max_num_batched_tokens=budget,
                  max_num_seqs=seqs, comm_s_per_token=comm, kv_serial=serial, kv_bandwidth_ratio=ratio)
    res = check_against_reference(setup, n, seed, load, closed)
    assert np.allclose(res.steps.duration.sum(), sum(
        setup.step_time(t, c) for t, c in zip(res.steps.tokens.tolist(), res.steps.context.tolist())))


def test_long_quiet_runs_take_the_vectorized_path_exactly():
    for serial, ratio in ((0.0, 1.0), (0.5, 0.7), (1.0, 1.0), (1.0, 0.65)):
        setup = Setup(params=1e9, weight_bytes=1e9, kv_bytes_per_token=4e5, kv_capacity_tokens=100000,
                      peak_flops=1e14, bandwidth=1e12, comm_s_per_token=2e-5, kv_serial=serial,
                      kv_bandwidth_ratio=ratio)
        w = workload.offline(8, 10, 400)
        ref = reference_run(setup, w.arrival, w.input_len, w.output_len)
        res = run(setup, w)
        assert np.array_equal(res.finish, [r.finish for r in ref])
        assert np.array_equal(res.steps.duration, [setup.step_time(t, c) for t, c in
                                                   zip(res.steps.tokens.tolist(), res.steps.context.tolist())])


def test_serial_kv_adds_the_kv_read_after_the_compute_bound():
    s = Setup(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, kv_capacity_tokens=200000)
    compute, kv = 2 * 7e9 * 4000 / (989e12 * 0.5), 131072 * 50000 / 3.35e12
    assert s.step_time(4000, 50000) == max(compute, 14e9 / 3.35e12 + kv) + 0.5e-3      # handbook
    full = s.replace(kv_serial=1.0).step_time(4000, 50000)
    assert full == pytest.approx(max(compute, 14e9 / 3.35e12) + kv + 0.5e-3)
    assert full > s.step_time(4000, 50000) and s.replace(kv_serial=0.5).step_time(4000, 50000) < full
    with pytest.raises(ValueError, match="kv_serial"):
        s.replace(kv_serial=1.5)


def test_zero_comm_is_the_handbook_rule():
    base = Setup(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, kv_capacity_tokens=200000)
    assert base.comm_s_per_token == 0
    assert base.step_time(100, 5000) == max(2 * 7e9 * 100 / (989e12 * 0.5), (14e9 + 131072 * 5000) / 3.35e12) + 0.5e-3
    a = simulate(base, 5.0, 200, 300, 50)
    b = simulate(base.replace(comm_s_per_token=1e-5), 5.0, 200, 300, 50)
    assert (b.finish - b.arrival).mean() > (a.finish - a.arrival).mean() and b.finish.max() > a.finish.max()


def test_tp_communication_grows_with_tp_and_shrinks_with_faster_links():
    # Measured all-reduces (sim.presets.kernels' tables), two per layer of the BF16 hidden state,
    # read at each step's message size: more GPUs cost more per step at every size on A100's ring,
    # communication is a larger share of a large step at tp 8 than at tp 2, and B200's NVLink 5 is faster.
    a2 = presets.instance("llama-3-8b", "a100-80gb", tp=2)
    a8 = presets.instance("llama-3-8b", "a100-80gb", tp=8)
    for tokens in (1, 64, 1024, 8192):
        assert a8.comm_seconds(tokens) > a2.comm_seconds(tokens)
    s2 = presets.instance("llama-3-70b", "h100-sxm", tp=2, weight_dtype="fp8")
    s8 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")

    def share(s):
        return s.comm_seconds(8192) / (2 * s.params * 8192 / (s.peak_flops * s.mfu))
    assert share(s2) < share(s8)
    b8 = presets.instance("llama-3-70b", "b200", tp=8, weight_dtype="fp8")
    assert all(b8.comm_seconds(t) < s8.comm_seconds(t) for t in (64, 1024, 8192))


def test_more_qps_never_needs_fewer_gpus_in_a_sweep():
    grid = {"gpu": ["h100-sxm"], "tp": [1, 2], "weight_dtype": ["fp8"]}
    gpus = []
    for qps in (5, 20, 80):
        rows = sweep("llama-3-8b", qps, 500, 100, 1.0, 0.05, grid=grid, workers=1, num_requests=300)
        gpus.append(rows[0].gpus)
    assert gpus == sorted(gpus)



