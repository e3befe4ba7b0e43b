"""``Setup.comm_curve``: a step's communication read at its own size (the measured all-reduce table).

Hand-worked values of the curve, its checks, one timeline worked by hand on both engine paths,
the compiled reader against ``Setup.comm_seconds`` bit for bit, the presets' use of the measured
table, and the analytic ceilings staying above what the engine delivers.
"""

import numpy as np
import pytest

from conftest import TICK, ticks, tiny_setup
from sim import Setup, presets
from sim._compiled import FastState, _curve_seconds
from sim.bound import ceilings
from sim.capacity import throughput_bound
from sim.engine import run_requests
from sim.presets.kernels import KERNELS

BASE = dict(params=7e9, weight_bytes=14e9, kv_bytes_per_token=131072, kv_capacity_tokens=10 ** 6)


def curve(*knots):
    return Setup(**BASE, comm_curve=knots)


def test_hand_worked_values():
    s = curve((2, 1.0), (4, 2.0), (8, 2.0))
    # flat below the first knot, linear between knots, the last segment (flat here) continued
    assert [s.comm_seconds(t) for t in (0, 1, 2, 3, 4, 6, 8, 100)] == [1.0, 1.0, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0]
    rising = curve((0, 0.0), (10, 1.0))
    assert rising.comm_seconds(5) == 0.5 and rising.comm_seconds(30) == 3.0     # continued past the last knot
    assert Setup(**BASE).comm_seconds(7) == 0.0


def test_arrays_give_the_scalars_bits():
    s = curve((0.5, 5.6e-4), (1.0, 5.58e-4), (2.0, 6.2e-4), (8.0, 1.02e-3), (64.0, 4.1e-3), (4096.0, 3.3e-2))
    t = np.arange(0, 9000)
    assert s.comm_seconds(t).tolist() == [s.comm_seconds(int(v)) for v in t]
    ctx = np.full(t.shape, 5000)
    assert s.step_times(t, ctx, 0, t).tolist() == [s.step_time(int(v), 5000, 0, int(v)) for v in t]


def test_the_compiled_reader_gives_the_same_bits():
    s = curve((0.5, 5.6e-4), (1.0, 5.58e-4), (3.0, 6.2e-4), (8.5, 1.02e-3), (64.0, 4.1e-3))
    f = FastState(s, None).f
    reader = _curve_seconds
    from sim import engine
    if engine.use_compiled(True):
        from sim._jit import compile_all
        from sim._compiled import SPECS
        reader = compile_all([spec for spec in SPECS if spec[0] == "_curve_seconds"])["_curve_seconds"]
    engine.use_compiled("auto")
    for t in range(0, 200):
        assert reader(f, t) == s.comm_seconds(t), t
    assert _curve_seconds(FastState(Setup(**BASE), None).f, 5) == 0.0


def test_the_step_adds_the_curve_after_the_other_terms():
    s = Setup(**BASE, comm_s_per_token=3e-7, host_s_per_seq=2e-5, kv_serial=0.5,
              comm_curve=((1, 1e-4), (16, 9e-4)))
    compute, memory, serial = s.roofline_terms(12, 4000)
    expected = max(compute, memory) + serial + s.step_overhead + (3e-7 * 12 + 2e-5 * 10) + s.comm_seconds(12)
    assert s.step_time(12, 4000, 0, 10) == expected


@pytest.mark.parametrize("bad, match", [
    (((1, 1.0),), "at least two"),
    (((1, 1.0), (1, 2.0)), "must increase"),
    (((2, 1.0), (1, 2.0)), "must increase"),
    (((1, -1.0), (2, 2.0)), r"comm_curve\[0\] seconds must be a finite number >= 0"),
    (((1, 1.0), (float("nan"), 2.0)), r"comm_curve\[1\] tokens"),
    (((1, 1.0), (2, True)), r"comm_curve\[1\] seconds"),
    (((1, 2.0), (2, 1.0)), "last two knots must not decrease"),
    ((1, 2, 3), "knots"),
    ("fast", "knots"),
])
def test_bad_curves_name_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        Setup(**BASE, comm_curve=bad)


def test_a_dip_in_the_middle_is_allowed_and_stored_as_floats():
    s = curve((1, 3.0), (2, 1.0), (4, 1.0))
    assert s.comm_curve == ((1.0, 3.0), (2.0, 1.0), (4.0, 1.0))
    assert s.replace(comm_curve=None).comm_curve is None


@pytest.mark.usefixtures("engine_path")
@pytest.mark.parametrize("knots, a, b", [
    # comm(T) = T ticks: step 0 (A's and B's prompts, 4 tokens) max(4, 2) + 4 = 8 ticks; step 1
    # (2 decoders) 2 + 2 = 4, B's last token at 12; step 2 (A alone) 2 + 1 = 3, A done at 15.
    (((1, TICK), (4, 4 * TICK)), (8, 15), (8, 12)),
    # a dip: one token costs 3 ticks, two or more 1: steps of 4 + 1, 2 + 1 and 2 + 3 ticks.
    (((1, 3 * TICK), (2, TICK), (4, TICK)), (5, 13), (5, 8)),
])
def test_hand_worked_timeline(knots, a, b):
    s = tiny_setup().replace(comm_curve=knots)
    res = run_requests(s, [0.0, 0.0], [2, 2], [3, 2])
    assert ticks(res.first_token) == [a[0], b[0]]
    assert ticks(res.finish) == [a[1], b[1]]


def test_presets_read_the_measured_table_at_each_steps_size():
    s = presets.instance("llama-3-70b", "h200", tp=8, weight_dtype="fp8")
    measured = dict(KERNELS["h200"]["allreduce_us"][8])
    per_token = 8192 * presets.ACTIVATION_BYTES                 # BF16 hidden state of one token
    allreduces = 2 * 80
    assert s.comm_s_per_token == presets.elementwise_s_per_token("llama-3-70b", "h200", 8, "fp8")   # no all-reduce line
    for tokens in (1, 2, 64, 1024, 4096, 16384):                # tokens whose message is a table size
        assert s.comm_seconds(tokens) == pytest.approx(allreduces * measured[tokens * per_token] * 1e-6, rel=1e-12)
    between = s.comm_seconds(96)                                # 1.5 MiB: halfway in bytes between 1 and 2 MiB
    assert between == pytest.approx(allreduces * (measured[2**20] + measured[2**21]) / 2 * 1e-6, rel=1e-12)
    # the step overhead no longer holds the all-reduces' latency (the curve does)
    line = presets.instance("llama-3-70b", "h200", tp=1, weight_dtype="fp8")
    assert s.step_overhead == pytest.approx(line.step_overhead, rel=1e-12)
    assert line.comm_curve is None
    assert line.comm_s_per_token == presets.elementwise_s_per_token("llama-3-70b", "h200", 1, "fp8")   # tp 1: no all-reduce


def test_a_gpu_without_a_table_keeps_the_line():
    s = presets.instance("llama-3-70b", "mi300x", tp=8, weight_dtype="fp8")
    assert s.comm_curve is None and s.comm_s_per_token > 0


def test_the_handbook_instance_has_no_curve():
    s = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8", mfu=0.4,
                         step_overhead=1.5e-3, bandwidth_util=1.0)
    assert s.comm_curve is None


@pytest.mark.parametrize("model, gpu, tp, dtype", [("llama-3-70b", "h200", 8, "fp8"),
                                                    ("llama-3-8b", "a100-80gb", 8, "bf16"),
                                                    ("llama-3.1-405b", "h200", 8, "fp8")])
def test_the_ceilings_stay_above_what_the_engine_delivers(model, gpu, tp, dtype):
    s = presets.instance(model, gpu, tp=tp, weight_dtype=dtype, max_num_seqs=256)
    for inp, out in ((2000, 200), (200, 2000), (100, 10)):
        c = ceilings(s, inp, out)
        n = 1500
        res = run_requests(s, [0.0] * n, [inp] * n, [out] * n)
        delivered = n / float(np.nanmax(res.finish))
        assert delivered <= min(c.compute, c.bandwidth) * (1 + 1e-9), (inp, out)
        assert throughput_bound(s, inp, out) == min(c.compute, c.bandwidth)
