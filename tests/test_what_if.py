"""benchmarks/what_if.py: step-model terms scored by bench_validation but kept out of the presets.

Each term is checked against numbers worked by hand from its docstring's formula, and ``apply``
against the Setup fields it may touch (and only those)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fidelity as F          # noqa: E402
import what_if as W           # noqa: E402

from sim import presets       # noqa: E402

H = 8192                      # Llama-2-70B: hidden 8192, 64 query heads and 8 KV heads of 128, MLP 28672


def test_elementwise_bytes_worked_by_hand_for_a_70b_fp8_layer():
    # replicated: 2 x (read residual and input, write residual: 3 x 2 B; write the FP8 input: 1 B) x h
    # divided: RoPE reads q, k, v (10240 x 2 B) and writes q (8192 x 2 B) and k, v to an FP8 cache
    # (2048 x 1 B); the attention output is quantised (8192 x 2 B read, 8192 x 1 B written)
    assert W.bytes_per_token_layer("llama-2-70b", "fp8", "fp8", "fused") == (
        2 * 7 * H, 10240 * 2 + 8192 * 2 + 2048 + 8192 * 3)
    assert W.bytes_per_token_layer("llama-2-70b", "fp8", "fp8", "fused") == (114688.0, 63488.0)
    # SwiGLU as its own pass: gate and up read (2 x 28672 x 2 B), the FP8 product written (28672 B)
    _, swiglu = W.bytes_per_token_layer("llama-2-70b", "fp8", "fp8", "fused+swiglu")
    assert swiglu - 63488.0 == 5 * 28672


def test_elementwise_bf16_has_no_quantisation_and_two_byte_outputs():
    replicated, divided = W.bytes_per_token_layer("llama-2-70b", "bf16", "bf16", "fused")
    assert replicated == 2 * 8 * H
    assert divided == 10240 * 2 + 8192 * 2 + 2048 * 2          # no attention-output quantisation


def test_elementwise_moe_swiglu_counts_the_routed_experts_width():
    m = presets.model("mixtral-8x7b")
    _, fused = W.bytes_per_token_layer("mixtral-8x7b", "fp8", "fp8", "fused")
    _, swiglu = W.bytes_per_token_layer("mixtral-8x7b", "fp8", "fp8", "fused+swiglu")
    assert swiglu - fused == 5 * m.experts_per_token * (m.moe_intermediate or m.intermediate)


def test_elementwise_seconds_divide_only_the_tp_share():
    g = presets.GPUS["h200"]
    layers = presets.model("llama-2-70b").layers
    for tp in (1, 2, 8):
        got = W.seconds_per_token("llama-2-70b", "h200", tp, "fp8", "fp8", "fused")
        assert got == pytest.approx(layers * (114688 + 63488 / tp) / (W.HBM_FRACTION * g.bandwidth), rel=1e-12)
    # the replicated part stays: tp 8 is far above an eighth of tp 1
    assert (W.seconds_per_token("llama-2-70b", "h200", 8, "fp8", "fp8", "fused")
            > 0.5 * W.seconds_per_token("llama-2-70b", "h200", 1, "fp8", "fp8", "fused"))


def test_elementwise_rejects_an_unknown_set():
    with pytest.raises(ValueError, match="fused"):
        W.bytes_per_token_layer("llama-2-70b", "fp8", "fp8", "unfused")


def _row(rid):
    return next(r for r in F.load_rows() if r.id == rid)


def test_apply_touches_only_the_per_token_time():
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    setup = F.setup_for(r)
    args = (F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)
    added = W.apply(setup, ("elementwise",), *args)
    changed = {k for k in setup.__dataclass_fields__ if getattr(setup, k) != getattr(added, k)}
    assert changed == {"comm_s_per_token"}
    assert added.comm_s_per_token == setup.comm_s_per_token + W.seconds_per_token(*args, "fused")
    assert W.apply(setup, (), *args) is setup


def test_fidelity_adds_the_what_if_to_every_row(monkeypatch):
    r = _row("nim-1.8.0-h100-llama3.3-70b-fp8-tp2-5000-500-c5-itl_s")
    monkeypatch.setattr(F, "WHAT_IF", ("elementwise",))
    got = F.setup_for(r)
    monkeypatch.setattr(F, "WHAT_IF", ())
    plain = F.setup_for(r)
    assert got == W.apply(plain, ("elementwise",), F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)


def test_apply_names_the_allowed_terms():
    setup = presets.instance("llama-2-70b", "h200", weight_dtype="fp8")
    with pytest.raises(ValueError, match="elementwise"):
        W.apply(setup, ("allreduce",), "llama-2-70b", "h200", 1, "fp8", "fp8")
    with pytest.raises(ValueError, match="pick one"):
        W.apply(setup, ("elementwise", "elementwise+swiglu"), "llama-2-70b", "h200", 1, "fp8", "fp8")


def test_rows_slice_by_their_sources_year():
    r = _row("mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2024"
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2025"
    assert F.source_year("no-such-source") == "undated"
