"""The step model's terms beyond the handbook's roofline: the smooth roofline (``roofline_p``), the
host time per decoding sequence (``host_s_per_seq``) and the MoE expert GEMMs of the calibrated
presets. Hand-worked timelines on both engine paths; the handbook's instance stays exact."""

import math

import numpy as np
import pytest

from reference import reference_run
from sim import Setup, presets
from sim.engine import run_requests
from sim.presets import efficiency
from sim.presets.kernels import KERNELS
from sim.presets.moe_kernels import MOE_KERNELS
from sim.setup import ROOFLINE_P, smooth_max

pytestmark = pytest.mark.usefixtures("engine_path")     # every test on both paths (conftest.py)

# compute 3 s per token (2 x 1.5 FLOPs at 1 FLOP/s), weights 4 s: a 3-4-5 triangle at p = 2
HAND = Setup(params=1.5, weight_bytes=4.0, kv_bytes_per_token=0, kv_capacity_tokens=100, peak_flops=1.0,
             bandwidth=1.0, mfu=1.0, step_overhead=0.5, roofline_p=2.0, host_s_per_seq=0.25)


def test_smooth_max_is_the_p_norm_and_exact_on_every_path():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(1e-6, 1.0, 2000), rng.uniform(1e-6, 1.0, 2000)
    for p in (2, 4, 8):
        vector = smooth_max(a, b, p, np.sqrt)
        scalar = np.array([smooth_max(float(x), float(y), p, math.sqrt) for x, y in zip(a, b)])
        assert np.array_equal(vector, scalar)                        # same bits: squarings and roots only
        np.testing.assert_allclose(vector, (a ** p + b ** p) ** (1 / p), rtol=1e-13)
        top = np.maximum(a, b)
        assert (vector >= top).all() and (vector <= top * 2 ** (1 / p) * (1 + 1e-15)).all()
    assert smooth_max(3.0, 4.0, 2, math.sqrt) == 5.0


def test_hand_worked_timeline():
    """One request, prompt 1, output 3. Step 1 (prefill, no decoder): sqrt(3^2 + 4^2) + 0.5 = 5.5;
    steps 2 and 3 (one decoder each): 5 + 0.5 + 0.25 = 5.75: first token 5.5, finish 17."""
    res = run_requests(HAND, [0.0], [1], [3])
    assert res.first_token[0] == 5.5 and res.finish[0] == 5.5 + 5.75 + 5.75
    assert list(res.steps.duration) == [5.5, 5.75, 5.75]
    ref = reference_run(HAND, [0.0], [1], [3])
    assert (ref[0].first_token, ref[0].finish) == (res.first_token[0], res.finish[0])


def test_host_time_grows_with_the_batch():
    """Two requests decoding together: each decode step pays 0.25 s per decoder."""
    res = run_requests(HAND.replace(roofline_p=0.0), [0.0, 0.0], [1, 1], [3, 3])
    # step 1: both prompts (2 tokens: compute 6 > memory 4) + 0.5; steps 2-3: 2 decoders, 6 + 0.5 + 0.5
    assert list(res.steps.duration) == [6.5, 7.0, 7.0]
    assert list(res.finish) == [20.5, 20.5]


def test_off_by_default_and_the_handbook_step_is_unchanged():
    s = Setup(params=7e10, weight_bytes=7e10, kv_bytes_per_token=163840, kv_capacity_tokens=10 ** 6)
    assert (s.roofline_p, s.host_s_per_seq) == (0.0, 0.0)
    compute, memory, serial = s.roofline_terms(300, 50_000)
    expected = max(compute, memory) + serial + s.step_overhead + s.comm_s_per_token * 300
    assert s.step_time(300, 50_000) == s.step_time(300, 50_000, 0, 300) == expected
    chapter = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8", mfu=0.4,
                               step_overhead=1.5e-3, bandwidth_util=1.0)
    assert (chapter.roofline_p, chapter.host_s_per_seq) == (0.0, 0.0)


def test_bad_values_name_the_field():
    with pytest.raises(ValueError, match="roofline_p"):
        HAND.replace(roofline_p=3.0)
    with pytest.raises(ValueError, match="host_s_per_seq"):
        HAND.replace(host_s_per_seq=-1e-6)


def test_calibrated_presets_take_the_fitted_exponent():
    assert all(g["p"] in ROOFLINE_P for k in KERNELS.values() for g in k["gemm"].values())
    s = presets.instance("llama-3-8b", "h100-sxm")
    assert s.roofline_p == KERNELS["h100-sxm"]["gemm"]["bf16"]["p"] != 0
    assert s.host_s_per_seq == presets.HOST_S_PER_SEQ
    # AMD has no per-shape tables: the H100's exponent stands in
    assert presets.instance("llama-3-8b", "mi300x").roofline_p == KERNELS["h100-sxm"]["gemm"]["bf16"]["p"]


def test_moe_experts_use_their_own_kernel_terms():
    """Mixtral's experts on an H100 in FP8 run at the MoE table's fit (routing imbalance), the rest
    of the layer at the dense GEMMs': mfu and bandwidth are their FLOP- and byte-weighted harmonic
    means, worked out here by hand; the exponent is the experts'."""
    mixtral = presets.model("mixtral-8x7b")
    moe = MOE_KERNELS["h100-sxm"]["fp8"][efficiency.moe_shape(4096, 14336, 8, 2)]
    dense = KERNELS["h100-sxm"]["gemm"]["fp8"]
    s = presets.instance("mixtral-8x7b", "h100-sxm", tp=2, weight_dtype="fp8")
    layer = (mixtral.active_params - 2 * mixtral.embedding_params) / mixtral.layers / 2
    expert = 3 * 4096 * 14336 / 2                        # one expert's parameters per GPU
    active, rest = 2 * expert, layer - 2 * expert
    e_rest = dense["e_inf"] * rest / (rest + dense["s_half"])
    e_moe = moe["e_inf"] * active / (active + moe["s_half"])
    peak = KERNELS["h100-sxm"]["peak"]["fp8"]
    assert s.mfu == pytest.approx(peak * layer / (rest / e_rest + active / e_moe) / 1979e12, rel=1e-12)
    u = (rest + 8 * expert) / (rest / dense["u"] + 8 * expert / moe["u"])
    assert s.bandwidth == pytest.approx(2 * 3.35e12 * u * KERNELS["h100-sxm"]["hbm"] / 3.35e12, rel=1e-12)
    assert s.roofline_p == moe["p"] == 2
    # a dense model is untouched by the MoE tables
    llama = presets.instance("llama-3-70b", "h100-sxm", tp=2, weight_dtype="fp8")
    assert llama.roofline_p == dense["p"]
