"""benchmarks/what_if.py: step-model terms scored by bench_validation but kept out of the presets.

Each term is checked against numbers worked by hand from its docstring's formula, and ``apply``
against the Setup fields it may touch (and only those)."""

import json
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


def test_allreduce_reads_the_measured_table_at_its_sizes_and_between_them():
    raw = json.loads(W.KERNEL_INPUTS.read_text())["gpus"]["h200"]["allreduce"]["tp8"]
    for size, us in raw.items():
        assert W.allreduce_seconds("h200", 8, int(size)) == pytest.approx(float(us) * 1e-6, rel=1e-12)
    sizes = sorted(int(s) for s in raw)
    mid = (sizes[5] * sizes[6]) ** 0.5                              # log-log midpoint of two sizes
    expect = (float(raw[str(sizes[5])]) * float(raw[str(sizes[6])])) ** 0.5 * 1e-6
    assert W.allreduce_seconds("h200", 8, mid) == pytest.approx(expect, rel=1e-9)
    assert W.allreduce_seconds("h200", 3, 1e6) is None                # no table at tp 3


def test_allreduce_secant_is_exact_at_both_ends():
    allreduces = 2 * presets.model("llama-3.1-405b").layers
    per_token_bytes = presets.model("llama-3.1-405b").hidden * presets.ACTIVATION_BYTES
    per_step, per_token = W.allreduce_terms("llama-3.1-405b", "h200", 8, 64, 2560)
    for tokens in (64, 2560):
        assert per_step + per_token * tokens == pytest.approx(
            allreduces * W.allreduce_seconds("h200", 8, tokens * per_token_bytes), rel=1e-9)
    assert W.allreduce_terms("llama-3.1-405b", "h200", 1, 64, 2560) is None


def _row(rid):
    return next(r for r in F.load_rows() if r.id == rid)


def test_apply_touches_only_the_step_overhead_and_per_token_time():
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    setup = F.setup_for(r)
    args = (F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)
    table = W.apply(setup, ("allreduce",), *args)
    changed = {k for k in setup.__dataclass_fields__ if getattr(setup, k) != getattr(table, k)}
    assert changed == {"step_overhead", "comm_s_per_token"}
    alpha = presets.efficiency.table("h200")["allreduce"][8][0]
    per_step, per_token = W.allreduce_terms(*args[:3], 64, 2560)        # max_num_seqs 64, budget 2560
    assert table.step_overhead == pytest.approx(setup.step_overhead - 2 * 126 * alpha + per_step, rel=1e-12)
    assert table.comm_s_per_token == per_token
    both = W.apply(setup, ("allreduce", "elementwise"), *args)
    assert both.comm_s_per_token == pytest.approx(
        per_token + W.seconds_per_token(*args, "fused"), rel=1e-12)
    assert W.apply(setup, (), *args) is setup


def test_allreduce_secant_starts_at_the_rows_own_decode_batch():
    """A fixed-concurrency row's decode steps carry its clients, not max_num_seqs: the secant is
    exact there, so one client's step pays the table's all-reduce of one token's hidden state."""
    r = _row("nim-1.8.0-h100-llama3.3-70b-fp8-tp2-5000-500-c1-itl_s")
    setup = F.setup_for(r)
    args = (F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype)
    m = presets.model(args[0])
    one = W.apply(setup, ("allreduce",), *args, decode_batch=1)
    alpha = presets.efficiency.table("h100-sxm")["allreduce"][2][0]
    step_allreduces = one.step_overhead - (setup.step_overhead - 2 * m.layers * alpha) + one.comm_s_per_token
    assert step_allreduces == pytest.approx(
        2 * m.layers * W.allreduce_seconds("h100-sxm", 2, m.hidden * presets.ACTIVATION_BYTES), rel=1e-9)
    wide = W.apply(setup, ("allreduce",), *args)             # the max_num_seqs secant: dearer at 1 token
    assert wide.step_overhead + wide.comm_s_per_token > one.step_overhead + one.comm_s_per_token
    assert W.apply(setup, ("allreduce",), *args, decode_batch=10 ** 6) == wide     # capped at max_num_seqs
    with pytest.raises(ValueError, match="decode_batch"):
        W.apply(setup, ("allreduce",), *args, decode_batch=0)


def test_fidelity_passes_a_concurrency_rows_clients_to_the_what_if(monkeypatch):
    r = _row("nim-1.8.0-h100-llama3.3-70b-fp8-tp2-5000-500-c5-itl_s")
    monkeypatch.setattr(F, "WHAT_IF", ("allreduce",))
    got = F.setup_for(r)
    monkeypatch.setattr(F, "WHAT_IF", ())
    plain = F.setup_for(r)
    assert got == W.apply(plain, ("allreduce",), F.preset_model(r), r.gpu, r.tp, r.weight_dtype,
                          r.kv_dtype, decode_batch=5)


def test_apply_leaves_a_tp1_setup_without_all_reduces_alone():
    r = _row("mlperf-v5.0-dell-xe9680-h200x8-llama2-70b-99.9-offline-tok")
    setup = F.setup_for(r)
    assert W.apply(setup, ("allreduce",), F.preset_model(r), r.gpu, r.tp, r.weight_dtype, r.kv_dtype) == setup


def test_apply_names_the_allowed_terms():
    setup = presets.instance("llama-2-70b", "h200", weight_dtype="fp8")
    with pytest.raises(ValueError, match="allreduce"):
        W.apply(setup, ("nccl",), "llama-2-70b", "h200", 1, "fp8", "fp8")
    with pytest.raises(ValueError, match="pick one"):
        W.apply(setup, ("elementwise", "elementwise+swiglu"), "llama-2-70b", "h200", 1, "fp8", "fp8")


def test_rows_slice_by_their_sources_year():
    r = _row("mlperf-v4.1-nvidia-h200x8-llama2-70b-99-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2024"
    r = _row("mlperf-v5.0-cisco-c885a-h200x8-llama3.1-405b-server-tok")
    assert r.slice_keys["slice/year"] == "capacity at the SLO / 2025"
    assert F.source_year("no-such-source") == "undated"
