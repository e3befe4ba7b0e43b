"""sim.presets: model shapes, GPU datasheet figures, and the Setup derived from them."""


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
    a = plan(200, chapter_preset(), 2000, 500, 2.0, 0.05, gpus_per_instance=8, search="chapter")
    b = plan(200, CHAPTER, 2000, 500, 2.0, 0.05, gpus_per_instance=8, search="chapter")
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
    assert s.params == m.active_params - m.embedding_params and s.weight_bytes == m.total_params


def test_derived_setup_by_hand():
    # The handbook rule (step_overhead given): datasheet memory x mem_util, the factors as given.
    s = presets.instance("llama-3-8b", "a100-80gb", tp=2, mem_util=0.8, mfu=0.45, bandwidth_util=0.7,
                         step_overhead=2e-3)
    m = MODELS["llama-3-8b"]
    assert s.weight_bytes == 2 * m.total_params and s.params == m.active_params
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert s.kv_capacity_tokens == int((2 * 80e9 * 0.8 - 2 * m.total_params) / (2 * 32 * 8 * 128 * 2))
    assert s.peak_flops == 2 * 312e12 and s.bandwidth == pytest.approx(2 * 2039e9 * 0.7)
    assert (s.step_overhead, s.comm_s_per_token, s.kv_serial, s.attn_flops_per_pair) == (2e-3, 0, 0, 0)


def test_calibrated_setup_by_hand():
    # The calibrated rule: every term from the kernel measurements of sim.presets.kernels.
    m, g = MODELS["llama-3-70b"], GPUS["h100-sxm"]
    k = presets.efficiency.table("h100-sxm")
    s = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8")
    gemm = k["gemm"]["fp8"]
    layer = (m.active_params - 2 * m.vocab * m.hidden) / m.layers / 4         # parameters per layer per GPU
    assert s.params == m.active_params - m.vocab * m.hidden                  # no FLOPs for the embedding lookup
    assert s.mfu == pytest.approx(gemm["e_inf"] * layer / (layer + gemm["s_half"]) * k["peak"]["fp8"] / g.fp8_flops)
    assert s.bandwidth == pytest.approx(4 * k["hbm"] * gemm["u"])
    assert s.kv_bandwidth_ratio == pytest.approx(k["kv_util"]["fp8"] / gemm["u"])
    assert s.step_overhead == pytest.approx(presets.BASE_OVERHEAD_S + 80 * (gemm["c_s"] + k["attn_floor_s"]))
    # the 160 all-reduces of a step read the measured table at the step's message (tokens x 8192 x 2 B)
    table = dict(k["allreduce_us"][4])
    # per token, only the kernels between the GEMMs (sim.presets.elementwise): 80 x (114688 B
    # replicated + 63488 B / 4) at 0.55 of H100's HBM
    assert s.comm_s_per_token == pytest.approx(80 * (114688 + 63488 / 4) / (0.55 * g.bandwidth), rel=1e-12)
    assert s.comm_seconds(64) == pytest.approx(160 * table[64 * 8192 * 2] * 1e-6, rel=1e-12)
    assert s.comm_seconds(96) == pytest.approx(160 * (table[2**20] + table[2**21]) / 2 * 1e-6, rel=1e-12)
    # on AMD, with no table, the line: latency in step_overhead, bytes over bandwidth per token
    amd = presets.instance("llama-3-70b", "mi300x", tp=4, weight_dtype="fp8")
    alpha, beta = presets.efficiency.table("mi300x")["allreduce"][4]
    assert amd.comm_curve is None and amd.comm_s_per_token == pytest.approx(
        160 * 8192 * 2 / beta + presets.elementwise_s_per_token("llama-3-70b", "mi300x", 4, "fp8"), rel=1e-12)
    assert s.attn_flops_per_pair == 4 * 80 * 64 * 128 and s.kv_serial == presets.KV_SERIAL == 1.0
    usable = k["memory"] * 0.9 - presets.RUNTIME_RESERVE_BYTES
    assert s.kv_capacity_tokens == int((4 * usable - m.total_params) / s.kv_bytes_per_token)
    one = presets.instance("llama-3-8b", "a100-80gb")          # tp 1, BF16: no all-reduce, no quantisation
    assert one.comm_s_per_token == pytest.approx(32 * (2 * 8 * 4096 + 6144 * 2 + 4096 * 2 + 2048 * 2)
                                                 / (0.50 * GPUS["a100-80gb"].bandwidth), rel=1e-12)
    assert one.step_overhead == pytest.approx(presets.BASE_OVERHEAD_S + 32 * (
        presets.efficiency.table("a100-80gb")["gemm"]["bf16"]["c_s"] + presets.efficiency.table("a100-80gb")["attn_floor_s"]))


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
        assert 1e14 < g.bf16_flops < 1e16 and 5e11 < g.bandwidth < 1e13 and 4e10 <= g.memory <= 3e11
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
    assert s.kv_serial == presets.KV_SERIAL == 1.0 and 0.5 < s.mfu < 0.8 and s.attn_flops_per_pair > 0
    # Passing step_overhead selects the handbook's rule (KV under the max, no per-token comm) ...
    h = presets.instance("llama-2-70b", "h200", tp=2, weight_dtype="fp8", step_overhead=1e-3)
    assert h.kv_serial == 0 and h.comm_s_per_token == 0 and (h.mfu, h.attn_flops_per_pair) == (presets.MFU, 0)
    assert h.bandwidth == pytest.approx(2 * 4.8e12 * presets.BANDWIDTH_UTIL)
    # ... unless the terms are given too.
    g = presets.instance("llama-2-70b", "h200", tp=2, weight_dtype="fp8", step_overhead=1e-3,
                         kv_serial=0.5, comm_s_per_token=1e-6)
    assert (g.kv_serial, g.comm_s_per_token) == (0.5, 1e-6)
    # Factors given to the calibrated rule replace the measured ones.
    c = presets.instance("llama-2-70b", "h200", weight_dtype="fp8", mfu=0.5, bandwidth_util=0.6)
    assert c.mfu == 0.5 and c.bandwidth == pytest.approx(4.8e12 * 0.6) and c.kv_serial == 1.0
    # A per-token communication time given to the calibrated rule replaces the measured all-reduce table.
    t = presets.instance("llama-2-70b", "h200", tp=8, weight_dtype="fp8")
    given = presets.instance("llama-2-70b", "h200", tp=8, weight_dtype="fp8", comm_s_per_token=1e-6)
    assert t.comm_curve is not None and given.comm_curve is None
    assert given.comm_s_per_token == 1e-6 + presets.elementwise_s_per_token("llama-2-70b", "h200", 8, "fp8")
    assert given.step_overhead == t.step_overhead


def test_small_tensor_parallel_slices_run_less_efficiently():
    """The fitted GEMM terms: per-GPU matmul efficiency falls with the slice's size, and each layer pays
    fixed kernel time, so a TP-8 70B step is slower than its datasheet roofline says."""
    mfus = [presets.instance("llama-3-70b", "h100-sxm", tp=tp, weight_dtype="fp8").mfu for tp in (1, 2, 4, 8)]
    assert mfus == sorted(mfus, reverse=True) and mfus[0] - mfus[-1] > 0.05
    s8 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")
    datasheet = s8.weight_bytes / (8 * 3.35e12)
    assert s8.step_time(8, 0) > 2 * datasheet


def test_every_gpu_has_kernel_terms():
    for name in GPUS:
        s = presets.instance("llama-3-8b", name, tp=1, weight_dtype="bf16")
        assert 0.2 < s.mfu <= 1 and 0.3 < s.bandwidth / GPUS[name].bandwidth <= 1 and s.step_overhead > 1e-3


def test_gpu_hour_usd_is_the_one_price_list():
    assert presets.gpu_hour_usd("h100-sxm") == presets.gpu_hour_usd("H100") == presets.GPU_HOUR_USD["h100-sxm"] == 2.5
    assert presets.gpu_hour_usd("h200", {"H200": 2.0}) == 2.0                  # any spelling of the name
    assert presets.gpu_hour_usd("h100_sxm", {"h200": 2.0}) == 2.5               # others keep the list
    assert presets.gpu_hour_usd("gh200", {"gh200": 4.0}) == 4.0
    with pytest.raises(ValueError, match=r"no price for GPU .*gh200.*--gpu-hour-usd"):
        presets.gpu_hour_usd("gh200")
    with pytest.raises(ValueError, match=r"gpu_hour_usd\['h200'\] must be a finite number >= 0"):
        presets.gpu_hour_usd("h200", {"h200": -1})
    with pytest.raises(ValueError, match="unknown gpu 'h900'"):
        presets.gpu_hour_usd("h900")
    assert set(presets.GPU_HOUR_USD) <= set(GPUS)


def test_sweep_rows_price_each_gpu_by_the_same_lookup():
    from sim.sweep import sweep
    grid = {"gpu": ["h100", "gh200"], "tp": [1], "weight_dtype": ["fp8"]}
    rows = {r.settings["gpu"]: r for r in sweep("llama-3-8b", 20, 500, 100, 1.0, 0.05, grid=grid, workers=1,
                                                gpu_hour_usd={"H100 SXM": 2.0})}
    assert set(rows) == {"h100-sxm", "gh200"}
    assert rows["h100-sxm"].usd_per_hour == rows["h100-sxm"].gpus * 2.0
    assert not rows["gh200"].feasible and "no price for GPU" in rows["gh200"].reason


def test_describe_uses_the_display_names():
    assert presets.describe("llama3-70b", "h100", 8, "fp8") == "Llama-3-70B on 8 x H100 SXM, weights FP8 / KV FP8"
    assert presets.describe("qwen2.5-7b", "mi300x", 1, "bf16", "fp8").endswith("weights BF16 / KV FP8")
    assert presets.model_key("Llama-3.1-70B") == "llama-3-70b" and presets.gpu_key("H200 SXM") == "h200"


def test_engine_sets_the_admission_policy_at_saturation():
    from sim import run, workload
    from sim.kv import Paged, RatioReserve
    base = dict(model_name="llama-3-8b", gpu_name="h100-sxm", weight_dtype="fp8")
    assert presets.instance(**base, engine="vllm").kv == Paged()
    assert presets.instance(**base, engine="sglang").kv == RatioReserve()
    assert presets.instance(**base, engine="trtllm") == presets.instance(**base)   # GUARANTEED_NO_EVICT: Reserve
    with pytest.raises(ValueError, match="engine must be one of"):
        presets.instance(**base, engine="tgi")
    with pytest.raises(ValueError, match="not both"):
        presets.instance(**base, engine="vllm", kv="paged")
    # A KV-bound load of long, varied answers: reserving every answer's whole length up front
    # (TensorRT-LLM) admits a dozen at a time; blocks as they fill (vLLM) or a decaying estimate of the
    # remaining answers (SGLang) admit more, preempt or retract when wrong, and finish far sooner.
    from sim import lengths
    load = workload.poisson(50.0, 300, 200, lengths.uniform(100, 1900), seed=0)
    makespan = {e: float(run(presets.instance(**base, engine=e, kv_capacity_tokens=20_000), load).finish.max())
                for e in ("trtllm", "vllm", "sglang")}
    assert makespan["vllm"] < 0.8 * makespan["trtllm"] and makespan["sglang"] < 0.8 * makespan["trtllm"], makespan
