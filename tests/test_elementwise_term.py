"""sim.presets.elementwise: the kernels between a layer's GEMMs, a derived per-token term.

Bytes are worked by hand from the module docstring's list; the seconds divide only the TP share;
the calibrated presets carry the term in ``comm_s_per_token`` and the handbook rule does not."""

import pytest

from sim import presets
from sim.presets import elementwise as E

H = 8192                      # Llama-2-70B: hidden 8192, 64 query heads and 8 KV heads of 128, MLP 28672
L70 = presets.model("llama-2-70b")


def test_bytes_worked_by_hand_for_a_70b_fp8_layer():
    # replicated: 2 x (read residual and input, write residual: 3 x 2 B; write the FP8 input: 1 B) x h
    # divided: RoPE reads q, k, v (10240 x 2 B) and writes q (8192 x 2 B) and k, v to an FP8 cache
    # (2048 x 1 B); the attention output is quantised (8192 x 2 B read, 8192 x 1 B written)
    assert E.bytes_per_token_layer(L70, "fp8", "fp8") == (2 * 7 * H, 10240 * 2 + 8192 * 2 + 2048 + 8192 * 3)
    assert E.bytes_per_token_layer(L70, "fp8", "fp8") == (114688.0, 63488.0)


def test_swiglu_pass_adds_gate_and_up_read_and_the_product_written():
    _, fused = E.bytes_per_token_layer(L70, "fp8", "fp8")
    _, swiglu = E.bytes_per_token_layer(L70, "fp8", "fp8", swiglu=True)
    assert swiglu - fused == 5 * 28672
    m = presets.model("mixtral-8x7b")                   # an MoE: top-k x the expert width
    _, fused = E.bytes_per_token_layer(m, "fp8", "fp8")
    _, swiglu = E.bytes_per_token_layer(m, "fp8", "fp8", swiglu=True)
    assert swiglu - fused == 5 * m.experts_per_token * (m.moe_intermediate or m.intermediate)


def test_bf16_and_weight_only_int4_quantise_nothing():
    for dtype in ("bf16", "int4"):                      # INT4 is W4A16: its GEMM inputs stay BF16
        replicated, divided = E.bytes_per_token_layer(L70, dtype, "bf16")
        assert replicated == 2 * 8 * H
        assert divided == 10240 * 2 + 8192 * 2 + 2048 * 2          # no attention-output quantisation


def test_fp4_inputs_count_their_block_scales():
    replicated, _ = E.bytes_per_token_layer(L70, "fp4", "fp8")
    assert replicated == 2 * (6 + 0.5625) * H          # 4 bits + an FP8 scale per 16 values


def test_mla_keeps_its_latent_write_on_every_gpu():
    m = presets.model("deepseek-v3")
    r1, d1 = E.bytes_per_token_layer(m, "fp8", "fp8")
    assert r1 == 2 * 7 * m.hidden + (m.kv_lora_rank + m.rope_dim) * 1
    assert d1 == m.heads * m.rope_dim * 4 + m.rope_dim * 4 + m.heads * m.v_head_dim * 3


def test_seconds_divide_only_the_tp_share():
    bw = presets.GPUS["h200"].bandwidth
    for tp in (1, 2, 8):
        got = E.seconds_per_token(L70, "h200", bw, tp, "fp8", "fp8")
        assert got == pytest.approx(80 * (114688 + 63488 / tp) / (0.55 * bw), rel=1e-12)
    assert E.seconds_per_token(L70, "h200", bw, 8, "fp8", "fp8") > 0.5 * E.seconds_per_token(L70, "h200", bw, 1, "fp8", "fp8")
    # 70B FP8 at tp 1 on one H200: about 5.4 us per token (tests/validation/README.md, item 1a)
    assert E.seconds_per_token(L70, "h200", bw, 1, "fp8", "fp8") == pytest.approx(5.4e-6, rel=0.02)


def test_each_gpu_reads_its_own_fraction_or_h100s():
    assert E.hbm_fraction("a100-80gb") == 0.50 and E.hbm_fraction("h100-sxm") == 0.55
    assert E.hbm_fraction("mi300x") == E.hbm_fraction("h200") == 0.55


def test_calibrated_presets_carry_the_term_and_the_handbook_rule_does_not():
    one = presets.instance("llama-2-70b", "h200", tp=1, weight_dtype="fp8")
    assert one.comm_s_per_token == presets.elementwise_s_per_token("llama-2-70b", "h200", 1, "fp8") > 0
    eight = presets.instance("llama-2-70b", "h200", tp=8, weight_dtype="fp8")   # NVIDIA tp 8: the table, plus the term
    assert eight.comm_curve is not None
    assert eight.comm_s_per_token == presets.elementwise_s_per_token("llama-2-70b", "h200", 8, "fp8")
    book = presets.instance("llama-2-70b", "h200", tp=8, weight_dtype="fp8", mfu=0.4, step_overhead=1.5e-3)
    assert book.comm_s_per_token == 0


def test_a_given_comm_s_per_token_replaces_only_the_all_reduce():
    given = presets.instance("llama-2-70b", "h200", tp=8, weight_dtype="fp8", comm_s_per_token=1e-6)
    assert given.comm_curve is None
    assert given.comm_s_per_token == 1e-6 + presets.elementwise_s_per_token("llama-2-70b", "h200", 8, "fp8")


def test_a_given_comm_s_per_token_replaces_the_line_where_there_is_no_table():
    """MI300X has no all-reduce table: the line's per-token part is replaced, its alpha (in the
    step overhead) stays, and the elementwise term is still added."""
    line = presets.instance("llama-2-70b", "mi300x", tp=8, weight_dtype="fp8")
    given = presets.instance("llama-2-70b", "mi300x", tp=8, weight_dtype="fp8", comm_s_per_token=2e-6)
    assert line.comm_curve is None and given.comm_curve is None
    between = presets.elementwise_s_per_token("llama-2-70b", "mi300x", 8, "fp8")
    assert line.comm_s_per_token > between
    assert given.comm_s_per_token == 2e-6 + between
    assert line.replace(comm_s_per_token=given.comm_s_per_token) == given      # nothing else moves


def test_elementwise_s_per_token_checks_its_names():
    with pytest.raises(ValueError, match="gpu"):
        presets.elementwise_s_per_token("llama-2-70b", "h900", 1)
    with pytest.raises(ValueError, match="weight_dtype"):
        presets.elementwise_s_per_token("llama-2-70b", "h200", 1, "fp7")
