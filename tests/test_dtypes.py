"""Weight and KV formats (sim.presets.dtypes): bytes, the tensor cores each computes on, and the
kernel measurements that stand for formats without their own."""
import pytest

from sim import presets
from sim.presets.dtypes import DTYPE_BYTES, KV_FORMATS, WEIGHT_FORMATS, default_kv_dtype
from sim.presets.gpus import GPUS
from sim.presets.models import MODELS

TERMS = ("mfu", "bandwidth", "kv_bandwidth_ratio", "attn_mfu", "step_overhead", "comm_s_per_token", "peak_flops")


def terms(setup):
    return tuple(getattr(setup, name) for name in TERMS)


def test_bytes_per_value():
    m = MODELS["llama-3-70b"]
    for dtype, size in (("bf16", 2), ("fp8", 1), ("int8", 1), ("int4", 0.5), ("fp4", 0.5)):
        gpu = "b200" if dtype == "fp4" else "h100-sxm"
        assert presets.instance("llama-3-70b", gpu, tp=8, weight_dtype=dtype).weight_bytes == m.total_params * size
    assert DTYPE_BYTES == {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5}
    assert set(KV_FORMATS) < set(WEIGHT_FORMATS)


def test_int8_on_hopper_runs_as_fp8_does():
    # same peak on the datasheet, same GEMM shapes: the fp8 tables stand for int8 W8A8
    for gpu in ("h100-sxm", "h200"):
        fp8 = presets.instance("llama-3-70b", gpu, tp=4, weight_dtype="fp8")
        int8 = presets.instance("llama-3-70b", gpu, tp=4, weight_dtype="int8", kv_dtype="fp8")
        assert terms(int8) == terms(fp8) and int8.weight_bytes == fp8.weight_bytes


def test_int8_on_a100_reaches_bf16_fractions_of_the_int8_peak():
    bf16 = presets.instance("llama-3-8b", "a100-80gb", tp=1, weight_dtype="bf16")
    int8 = presets.instance("llama-3-8b", "a100-80gb", tp=1, weight_dtype="int8")
    assert int8.peak_flops == 624e12 == 2 * bf16.peak_flops
    assert int8.mfu == bf16.mfu                     # the same fraction, of twice the peak
    # attention still runs in BF16 (the INT8 KV is dequantised): half the INT8 peak's fraction
    assert int8.attn_mfu == pytest.approx(bf16.attn_mfu / 2)


def test_int4_weight_only_computes_in_bf16_with_a_quarter_of_the_bytes():
    bf16 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="bf16")
    int4 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="int4")
    assert int4.kv_bytes_per_token == bf16.kv_bytes_per_token     # default KV: BF16
    assert terms(int4) == terms(bf16) and int4.weight_bytes == bf16.weight_bytes / 4
    assert int4.kv_capacity_tokens > bf16.kv_capacity_tokens


def test_int4_wins_at_low_batch_and_loses_compute_bound_prefill():
    """Chapter 05's claim: weight-only INT4 reads a quarter of BF16's bytes (half of FP8's), so a
    small decode step is fastest in INT4; a large prefill is compute-bound and runs at BF16 speed,
    twice FP8's."""
    s = {d: presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype=d, kv_dtype="fp8")
         for d in ("bf16", "fp8", "int4")}
    decode = {d: x.step_time(4, 4 * 2000) for d, x in s.items()}
    prefill = {d: x.step_time(8192, 0) for d, x in s.items()}
    assert decode["int4"] < decode["fp8"] < decode["bf16"]
    assert prefill["fp8"] < prefill["int4"] and prefill["int4"] == pytest.approx(prefill["bf16"], rel=0.02)


def test_every_gpu_gives_int8_and_datasheets_agree():
    for key, g in GPUS.items():
        assert g.int8_flops is not None
        assert g.int8_flops == (g.fp8_flops if g.fp8_flops is not None else 2 * g.bf16_flops)
        presets.instance("llama-3-8b", key, weight_dtype="int8")


@pytest.mark.parametrize("kwargs, message", [
    ({"weight_dtype": "int3"}, "weight_dtype must be one of"),
    ({"weight_dtype": "int4", "kv_dtype": "int4"}, "kv_dtype must be one of"),
    ({"weight_dtype": "fp4"}, "no FP4"),
])
def test_bad_formats_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        presets.instance("llama-3-8b", "h100-sxm", **kwargs)


def test_the_kv_cache_defaults_to_the_weights_format_or_bf16():
    """One default, read by instance(), elementwise_s_per_token() and describe() alike."""
    assert [default_kv_dtype(w) for w in ("bf16", "fp8", "int8", "fp4", "int4")] == \
        ["bf16", "fp8", "int8", "fp4", "bf16"]
    assert set(WEIGHT_FORMATS) - set(KV_FORMATS) == {"int4"}        # the only weight format without a KV twin
    for weights in WEIGHT_FORMATS:
        kv = default_kv_dtype(weights)
        plain = presets.instance("llama-3-8b", "b200", weight_dtype=weights)       # B200: every format
        named = presets.instance("llama-3-8b", "b200", weight_dtype=weights, kv_dtype=kv)
        assert plain == named
        assert presets.describe("llama-3-8b", "b200", 1, weights).endswith(f"KV {kv.upper()}")
        assert presets.elementwise_s_per_token("llama-3-8b", "b200", 1, weights) == \
            presets.elementwise_s_per_token("llama-3-8b", "b200", 1, weights, kv)
