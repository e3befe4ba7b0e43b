"""sim.presets: model shapes, GPU datasheet figures, and the Setup derived from them."""

import math

import pytest

from sim import Setup, presets
from sim import plan
from sim.presets.gpus import GPUS
from sim.presets.models import MODELS

CHAPTER = Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=2 * 80 * 8 * 128,
                kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / (2 * 80 * 8 * 128)),
                peak_flops=8 * 1979e12, bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3,
                max_num_batched_tokens=8192, max_num_seqs=512)


def chapter_preset():
    return presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8",
                            mfu=0.4, step_overhead=1.5e-3, bandwidth_util=1.0)


def test_chapter_instance_within_a_thousandth():
    s = chapter_preset()
    for field in ("params", "weight_bytes", "kv_bytes_per_token", "kv_capacity_tokens", "peak_flops",
                  "bandwidth", "mfu", "step_overhead", "max_num_batched_tokens", "max_num_seqs"):
        assert getattr(s, field) == pytest.approx(getattr(CHAPTER, field), rel=1e-3), field
    assert s.kv_bytes_per_token == 163840 and s.comm_s_per_token == 0 and s.kv_serial == 0


def test_chapter_plan_from_presets_prints_the_chapter_figures():
    a = plan(200, chapter_preset(), 2000, 500, 2.0, 0.05, gpus_per_instance=8)
    b = plan(200, CHAPTER, 2000, 500, 2.0, 0.05, gpus_per_instance=8)
    assert str(a) == str(b)
    assert (a.instances_no_headroom, a.instances, a.gpus, round(a.usd_per_hour)) == (12, 16, 128, 320)
    assert f"{a.rate_per_instance:.1f} {a.usd_per_million_output_tokens:.2f}" == "16.8 0.89"


def hand_dense(layers, hidden, heads, kv, hd, vocab, inter, tied=False, bias=False):
    attn = hidden * heads * hd * 2 + 2 * hidden * kv * hd + (heads * hd + 2 * kv * hd if bias else 0)
    per_layer = attn + 3 * hidden * inter + 2 * hidden
    return layers * per_layer + vocab * hidden * (1 if tied else 2) + hidden


@pytest.mark.parametrize("name, shape, published", [
    ("llama-3-8b", (32, 4096, 32, 8, 128, 128256, 14336), 8.03e9),
    ("llama-3-70b", (80, 8192, 64, 8, 128, 128256, 28672), 70.6e9),
    ("llama-3.1-405b", (126, 16384, 128, 8, 128, 128256, 53248), 405.9e9),
    ("llama-2-70b", (80, 8192, 64, 8, 128, 32000, 28672), 69.0e9),
    ("qwen2.5-7b", (28, 3584, 28, 4, 128, 152064, 18944), 7.61e9),
    ("qwen2.5-72b", (80, 8192, 64, 8, 128, 152064, 29568), 72.7e9),
])
def test_dense_params_by_hand(name, shape, published):
    m = MODELS[name]
    assert m.total_params == m.active_params == hand_dense(*shape, bias=m.qkv_bias)
    assert m.total_params == pytest.approx(published, rel=0.01)
    layers, _, _, kv, hd, _, _ = shape
    assert m.kv_values_per_token() == 2 * layers * kv * hd


def test_mixtral_total_and_active_by_hand():
    m = MODELS["mixtral-8x7b"]
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024
    expert = 3 * 4096 * 14336
    base = 32 * (attn + 2 * 4096 + 8 * 4096) + 2 * 32000 * 4096 + 4096
    assert m.total_params == base + 32 * 8 * expert
    assert m.active_params == base + 32 * 2 * expert
    assert m.total_params == pytest.approx(46.7e9, rel=0.01) and m.active_params == pytest.approx(12.9e9, rel=0.01)


def test_deepseek_v3_mla_and_moe_by_hand():
    m = MODELS["deepseek-v3"]
    h = 7168
    attn = (h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h)
    expert = 3 * h * 2048
    common = 61 * (attn + 2 * h) + 3 * 3 * h * 18432 + 58 * h * 256 + 2 * 129280 * h + h
    assert m.total_params == common + 58 * 257 * expert
    assert m.active_params == common + 58 * 9 * expert
    assert m.total_params == pytest.approx(671e9, rel=0.01) and m.active_params == pytest.approx(37e9, rel=0.03)
    assert m.kv_values_per_token() == 61 * (512 + 64)
    s = presets.instance("deepseek-v3", "h200", tp=8, weight_dtype="fp8")
    assert s.kv_bytes_per_token == 8 * 61 * 576          # every TP rank keeps the whole latent
    assert s.params == m.active_params and s.weight_bytes == m.total_params


def test_derived_setup_by_hand():
    s = presets.instance("llama-3-8b", "a100-80gb", tp=2, mem_util=0.8, mfu=0.45, bandwidth_util=0.7)
    m, g = MODELS["llama-3-8b"], GPUS["a100-80gb"]
    assert s.weight_bytes == 2 * m.total_params
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert s.kv_capacity_tokens == int((2 * 80e9 * 0.8 - 2 * m.total_params) / (2 * 32 * 8 * 128 * 2))
    assert s.peak_flops == 2 * 312e12 and s.bandwidth == pytest.approx(2 * 2039e9 * 0.7)
    assert s.step_overhead == pytest.approx(presets.BASE_OVERHEAD_S + 2 * 32 * presets.ALLREDUCE_LATENCY_S)
    ring = 2 * 32 * 4096 * 2 * 2 * (2 - 1) / 2 / (600e9 / 2 * presets.LINK_UTIL)
    assert s.comm_s_per_token == pytest.approx(ring)
    one = presets.instance("llama-3-8b", "a100-80gb")
    assert one.comm_s_per_token == 0 and one.step_overhead == presets.BASE_OVERHEAD_S


def test_kv_heads_replicate_past_tp():
    s = presets.instance("qwen2.5-7b", "l40s", tp=4)           # 4 KV heads: one per GPU
    assert s.kv_bytes_per_token == 2 * 28 * 4 * 128 * 2
    with pytest.raises(ValueError, match="does not divide"):
        presets.instance("qwen2.5-7b", "l40s", tp=8)            # 28 heads


def test_overrides_and_fp8_kv():
    s = presets.instance("llama-3-70b", "h200", tp=4, weight_dtype="fp8", kv_capacity_tokens=1000, max_num_seqs=64)
    assert s.kv_capacity_tokens == 1000 and s.max_num_seqs == 64
    assert presets.instance("llama-3-70b", "h200", tp=4, weight_dtype="fp8").kv_bytes_per_token == 163840
    assert presets.instance("llama-3-70b", "h200", tp=4, weight_dtype="fp8", kv_dtype="bf16").kv_bytes_per_token == 327680


@pytest.mark.parametrize("args, kwargs, message", [
    (("llama-3-70b", "a100-80gb"), {"tp": 8, "weight_dtype": "fp8"}, "no FP8"),
    (("llama-3.1-405b", "h100-sxm"), {"tp": 8}, "does not fit at tp=8.*tp >= 12"),
    (("llama-3-70b", "h100-sxm"), {"tp": 1}, "does not fit at tp=1"),
    (("lama-3-70b", "h100-sxm"), {}, "unknown model.*'llama-3-70b'"),
    (("llama-3-70b", "h10"), {}, "unknown gpu.*'h100-sxm'"),
    (("llama-3-70b", "h100-sxm"), {"tp": 16}, r"tp must be .*\[1, 8\]"),
    (("llama-3-70b", "h100-sxm"), {"tp": 8, "weight_dtype": "int3"}, "weight_dtype must be one of"),
    (("llama-3-70b", "h100-sxm"), {"tp": 8, "bandwidth_util": 1.5}, "bandwidth_util"),
    (("llama-3-70b", "h100-sxm"), {"tp": 8, "flux": 1}, "unknown instance"),
])
def test_invalid_combinations(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        presets.instance(*args, **kwargs)


def test_every_gpu_and_model_has_sources_and_sane_numbers():
    for g in GPUS.values():
        assert g.source.startswith("https://")
        assert 1e14 < g.bf16_flops < 1e16 and 5e11 < g.bandwidth < 1e13 and 4e10 <= g.memory <= 2e11
        assert g.fp8_flops is None or g.fp8_flops == pytest.approx(2 * g.bf16_flops, rel=0.05)
    for m in MODELS.values():
        assert "huggingface.co" in m.source


def test_more_bandwidth_never_worsens_low_load_tpot():
    from sim import simulate
    tpots = []
    for util in (0.5, 0.7, 0.9, 1.0):
        s = presets.instance("llama-3-8b", "h100-sxm", bandwidth_util=util)
        tpots.append(float(simulate(s, 1.0, 30, 500, 100).tpot.mean()))
    assert tpots == sorted(tpots, reverse=True) and tpots[0] > tpots[-1]


def test_calibrated_defaults_and_the_handbook_rule():
    s = presets.instance("llama-2-70b", "h200", weight_dtype="fp8")
    assert (s.mfu, s.kv_serial) == (presets.MFU, presets.KV_SERIAL) == (0.7, 1.0)
    assert s.bandwidth == pytest.approx(4.8e12 * presets.BANDWIDTH_UTIL) and presets.BANDWIDTH_UTIL == 0.75
    # Passing step_overhead selects the handbook's rule (KV under the max, no per-token comm) ...
    h = presets.instance("llama-2-70b", "h200", tp=2, weight_dtype="fp8", step_overhead=1e-3)
    assert h.kv_serial == 0 and h.comm_s_per_token == 0
    # ... unless the terms are given too.
    g = presets.instance("llama-2-70b", "h200", tp=2, weight_dtype="fp8", step_overhead=1e-3,
                         kv_serial=0.5, comm_s_per_token=1e-6)
    assert (g.kv_serial, g.comm_s_per_token) == (0.5, 1e-6)


def test_in_switch_reduction_sends_the_data_once():
    m = MODELS["llama-3-70b"]
    data = 2 * 80 * 8192 * presets.ACTIVATION_BYTES
    for gpu, tp, share in (("h100-sxm", 2, 1.0), ("h100-sxm", 8, 1.0), ("a100-80gb", 8, 1.75),
                           ("a100-80gb", 4, 1.5), ("mi300x", 8, 1.75)):
        g = GPUS[gpu]
        assert presets.allreduce_s_per_token(m, g, tp) == pytest.approx(
            data * share / (g.interconnect / 2 * presets.LINK_UTIL)), (gpu, tp)
