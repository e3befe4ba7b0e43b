"""course.ch03: the chapter's hand estimates, its simulations (small and fast versions), its panel
driven without a kernel, and the executed notebook: every figure the prose quotes is printed by a
cell."""

import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course import ch03
from sim import presets

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "03-design-answers-1.ipynb"


# ---- estimates ---------------------------------------------------------------------------------

def test_table_formats_numbers_as_the_chapter_prints_them():
    text = ch03.table({"a_tokens": 750000.0, "b_ms": 8.1923, "c": 0.00522, "ok": True, "n": 96})
    assert text.splitlines() == ["a_tokens  750,000", "b_ms      8.19", "c         0.00522", "ok        True",
                                 "n         96"]


def test_moe_demand_counts_only_uncached_prompt_tokens():
    d = ch03.moe_demand(500, 3000, 800, prefix_hit=0.5)
    assert d["prefill_tokens_per_s"] == 750_000 and d["decode_tokens_per_s"] == 400_000
    active = presets.model("deepseek-v3").active_params
    assert d["prefill_pflops"] == pytest.approx(750_000 * 2 * active / 1e15)
    assert ch03.moe_demand(500, 3000, 800, prefix_hit=0.0)["prefill_tokens_per_s"] == 1_500_000


def test_moe_parts_split_the_671b_model():
    p = ch03.moe_parts()
    assert p["routed_expert_gb"] == pytest.approx(58 * 256 * 3 * 7168 * 2048 / 1e9)
    assert p["routed_expert_gb"] + p["replicated_gb"] == pytest.approx(presets.model("deepseek-v3").total_params / 1e9)
    assert p["kv_bytes_per_token"] == 61 * (512 + 64)


def test_all_to_all_bytes_shrink_with_node_limit_and_local_share():
    full = ch03.a2a_bytes_per_token(10**9)                       # (almost) every destination remote
    assert full == pytest.approx(58 * 4 * 7168 * 3, rel=1e-6)
    assert ch03.a2a_bytes_per_token(8) == 0                     # one node: all NVLink
    assert ch03.a2a_bytes_per_token(32) == pytest.approx(full * 0.75, rel=1e-6)
    assert ch03.a2a_bytes_per_token(32, node_limit=8) == pytest.approx(2 * ch03.a2a_bytes_per_token(32))


def test_prefill_pool_is_whole_instances_of_its_ep_size():
    p = ch03.moe_prefill_gpus(500, 3000, 0.5, ep=32)
    assert p["gpus"] % 32 == 0 and p["gpus"] >= p["gpus_exact"] > p["gpus"] - 32
    assert p["tokens_per_s_per_gpu"] == pytest.approx(1e6 / max(p["compute_us_per_token"], p["a2a_us_per_token"]))
    more = ch03.moe_prefill_gpus(500, 3000, 0.0, ep=32)           # no prefix hits: about twice the GPUs
    assert more["gpus_exact"] > 1.9 * p["gpus_exact"]
    # DP attention: one request's 1500 uncached tokens run at one GPU's rate, not the group's
    assert p["prefill_ms_one_request"] == pytest.approx(1500 / p["tokens_per_s_per_gpu"] * 1e3)


def test_low_latency_all_to_all_and_absorbed_mla_by_hand():
    assert ch03.a2a_low_latency_bytes_per_token() == 58 * 8 * 7168 * 3            # every selected expert
    assert ch03.a2a_low_latency_bytes_per_token() > 2 * ch03.a2a_bytes_per_token(10**9)   # no node de-duplication
    assert ch03.mla_absorbed_flops_per_pair() == 2 * 61 * 128 * (576 + 512)
    expanded = presets.model("deepseek-v3").attention_flops_per_pair()
    assert expanded == 2 * 61 * 128 * (192 + 128) and ch03.mla_absorbed_flops_per_pair() > 3 * expanded


def test_decode_step_by_hand():
    g, m = presets.gpu("h200"), presets.model("deepseek-v3")
    d = ch03.moe_decode_step(104, 500, 3000, 800, 0.05)
    batch = 20_000 / 104
    assert d["batch_per_gpu"] == pytest.approx(batch)
    assert d["a2a_ms"] == pytest.approx(batch * 58 * 8 * 7168 * 3 / 40e9 * 1e3)
    assert d["linear_ms"] == pytest.approx(batch * 2 * m.active_params / (g.flops("fp8") * 0.4) * 1e3)
    assert d["attention_ms"] == pytest.approx(batch * 2 * 61 * 128 * 1088 * 3400 / (g.flops("bf16") * 0.6) * 1e3)
    assert d["step_ms"] == pytest.approx(max(d["memory_ms"], d["compute_ms"], d["a2a_ms"]) + 1.5)
    assert d["a2a_ms"] > d["compute_ms"] > d["memory_ms"]           # decode is all-to-all bound
    assert d["tokens_per_s_per_gpu"] == pytest.approx(batch / (d["step_ms"] / 1e3))


def test_deepep_latency_cross_check_by_hand():
    x = ch03.a2a_ms_from_deepep(192, 104)
    assert (x["measured_ep"], x["dispatch_us_per_layer"], x["combine_us_per_layer"]) == (128, 192, 369)
    assert x["ms_at_128_tokens"] == pytest.approx(58 * (192 + 369) / 1e3)
    assert x["ms_at_batch"] == pytest.approx(x["ms_at_128_tokens"] * 192 / 128)
    assert ch03.a2a_ms_from_deepep(128, 8)["measured_ep"] == 8
    assert ch03.a2a_ms_from_deepep(128, 1000)["measured_ep"] == 256
    d = ch03.moe_decode_step(104)                       # the bandwidth model agrees within 10%
    assert ch03.a2a_ms_from_deepep(d["batch_per_gpu"], 104)["ms_at_batch"] == pytest.approx(d["a2a_ms"], rel=0.1)


def test_decode_pool_is_the_smallest_that_meets_tpot():
    d = ch03.moe_decode_gpus(500, 3000, 800, tpot_s=0.05)
    assert d["ok"] and d["step_ms"] <= 50 and d["gpus"] % 8 == 0
    smaller = ch03.moe_decode_step(d["gpus"] - 8, 500, 3000, 800, 0.05)
    assert not smaller["ok"]
    assert d["sequences"] == pytest.approx(500 * 800 * 0.05)
    tight = ch03.moe_decode_gpus(500, 3000, 800, tpot_s=0.03)
    assert tight["gpus"] > d["gpus"]


def test_deepseek_published_rates_by_hand():
    r = ch03.deepseek_published_rates()
    assert r["prefill_uncached_per_gpu"] == pytest.approx(73_700 * (1 - 0.563) / 8)
    assert r["decode_per_gpu"] == 1850
    assert r["gpu_hours_per_million_output"] == pytest.approx(226.75 * 8 * 24 / 168_000)
    assert r["usd_per_million_output"] == pytest.approx(87_072 / 168_000, rel=1e-3)   # their stated $87,072 a day


def test_gpu_range_brackets_deepseeks_own_fleet():
    roof, pub = ch03.moe_gpu_range()
    assert (roof["prefill_gpus"], roof["decode_gpus"]) == (96, 104)
    assert pub["prefill_gpus"] == 192 and pub["decode_gpus"] == 224    # 186.3 -> 6 x EP32, 216.2 -> 28 nodes
    assert pub["gpus"] == 256 + 296 and roof["gpus"] == 128 + 136
    assert roof["gpu_hours_per_m_bare"] == pytest.approx(200 / 1440)
    fleet = ch03.deepseek_published_rates()["gpu_hours_per_million_output"]
    assert roof["gpu_hours_per_m_bare"] < fleet < pub["gpu_hours_per_m_bare"]
    assert pub["usd_per_m_output"] == pytest.approx(552 * 3 / 1440)


def test_pd_kv_transfer_by_hand():
    t = ch03.pd_kv_transfer(500, 3000, 0.5, prefill_gpus=96)
    assert t["kv_mb_per_request"] == pytest.approx(3000 * 35_136 / 1e6)
    assert t["aggregate_gbs"] == pytest.approx(500 * 3000 * 35_136 / 1e9)
    assert t["transfer_ms_one_nic"] == pytest.approx(3000 * 35_136 / 50e9 * 1e3)
    assert t["prefill_nic_share"] == pytest.approx(t["aggregate_gbs"] / (96 * 50))
    assert t["kv_over_a2a_bytes"] == pytest.approx(3000 * 35_136 / 1500 / ch03.a2a_bytes_per_token(32))
    assert "decode_nic_share" not in t


def test_pd_kv_transfer_lengthens_the_decode_all_to_all():
    """The KV lands on the decode pool's NICs, which the low-latency all-to-all already fills: at the
    roofline's 104 GPUs the step goes past the 50 ms TPOT; one more node (112) brings it back."""
    d = ch03.moe_decode_gpus(500, 3000, 800, tpot_s=0.05)
    t = ch03.pd_kv_transfer(500, 3000, 0.5, prefill_gpus=96, decode=d)
    share = 500 * 3000 * 35_136 / (104 * 40e9)
    assert t["decode_nic_share"] == pytest.approx(share)
    assert t["decode_a2a_ms_with_kv"] == pytest.approx(d["a2a_ms"] * (1 + share))
    assert t["decode_step_ms_with_kv"] == pytest.approx(d["step_ms"] + d["a2a_ms"] * share)   # a2a binds
    assert d["step_ms"] <= 50 < t["decode_step_ms_with_kv"]
    wider = ch03.pd_kv_transfer(500, 3000, 0.5, prefill_gpus=96, decode=ch03.moe_decode_step(112))
    assert wider["decode_step_ms_with_kv"] < 50


def test_measured_rates_sit_between_deepseeks_day_and_the_roofline():
    p, d = ch03.moe_prefill_gpus(500, 3000, 0.5), ch03.moe_decode_gpus(500, 3000, 800)
    rows = {r["source"]: r for r in ch03.measured_vs_roofline(p, d)}
    sglang, vllm, day = rows["SGLang, H100"], rows["vLLM, H200"], rows["DeepSeek, H800, day mean"]
    assert sglang["prefill_per_gpu"] == 52_300 / 8 and sglang["decode_per_gpu"] == 22_300 / 8
    assert sglang["decode_share"] == pytest.approx(22_300 / 8 / d["tokens_per_s_per_gpu"])
    assert vllm["prefill_per_gpu"] is None and vllm["prefill_share"] is None
    assert day["decode_share"] < vllm["decode_share"] < sglang["decode_share"] < 1
    assert day["prefill_share"] < sglang["prefill_share"] < 1
    text = ch03.format_rows(list(rows.values()), ch03.MEASURED_COLUMNS)
    assert "vLLM, H200" in text and " - " in text                       # a missing figure prints as a dash


def test_moe_cost_rounds_each_pool_to_nodes():
    c = ch03.moe_cost(96, 48, 500, 3000, 800, headroom=1.3, usd_per_gpu_hour=3.0)
    assert c["gpus"] == 128 + 64 and c["usd_per_hour"] == 576
    assert c["usd_per_million_output"] == pytest.approx(576 / (500 * 800 * 3600) * 1e6)


def test_free_prefill_tokens_is_the_weight_read_in_flops():
    s = ch03.deepseek_setup()
    t = s.weight_bytes / s.bandwidth
    assert ch03.free_prefill_tokens(s) * 2 * s.params == pytest.approx(t * s.peak_flops * s.mfu)


def test_kv_tiers_and_break_even():
    k = ch03.kv_tiers(10_000, 5000)
    assert k["kv_per_session_gb"] == pytest.approx(10_000 * 163840 / 1e9)
    assert k["gpu_sessions"] < k["dram_sessions"] < k["ssd_sessions"]
    r = ch03.readback_vs_recompute(10_000, dram_gbs=200, ssd_gbs=48)
    assert r["dram_readback_ms"] < r["ssd_readback_ms"] < r["recompute_ms"]
    at = ch03.readback_vs_recompute(10_000, dram_gbs=r["break_even_gbs"])
    assert at["dram_readback_ms"] == pytest.approx(at["recompute_ms"])


def test_prefix_index_size():
    x = ch03.prefix_index(200, 5000, 3000, kv_tokens_per_instance=1_600_000, block_tokens=16, entry_bytes=50,
                          hit_rate=0.8, output_tokens=0, tokens_per_s_per_core=5e5)
    assert x["blocks_m"] == pytest.approx(20.0) and x["index_gb"] == pytest.approx(1.0)
    assert x["lookups_per_s_m"] == pytest.approx(5000 * 3000 / 16 / 1e6)
    assert x["inserts_per_s_m"] == pytest.approx(0.2 * x["lookups_per_s_m"])       # only the missed blocks
    assert x["events_per_s_m"] == pytest.approx(2 * x["inserts_per_s_m"])          # and as many evictions
    assert x["tokeniser_cores"] == pytest.approx(5000 * 3000 / 5e5)
    y = ch03.prefix_index(200, 5000, 3000, hit_rate=0.8, output_tokens=320)   # 20 decoded blocks each
    assert y["inserts_per_s_m"] == pytest.approx(x["inserts_per_s_m"] + 5000 * 20 / 1e6)


def test_dram_placement_by_hand():
    d = ch03.dram_placement(sessions=5000, nodes=16, session_tokens=10_000, dram_gb=1500)
    assert d["sessions_per_node_dram"] == 1500e9 // (10_000 * 163_840) == 915
    assert d["pooled_sessions"] == 16 * 915 and d["pooled_covers_all"]
    assert d["hit_without_affinity"] == 1 / 16 and d["sessions_lost_per_node_failure"] == 5000 / 16
    assert d["local_readback_ms"] == pytest.approx(10_000 * 163_840 / 200e9 * 1e3)
    # pooled: the network at Mooncake's measured 190 GB/s (8 x 400 Gb/s NICs) is the narrower link
    assert d["pooled_readback_ms"] == pytest.approx(10_000 * 163_840 / 190e9 * 1e3)
    assert ch03.dram_placement(rdma_gbs=400)["pooled_readback_ms"] == pytest.approx(d["local_readback_ms"])
    slow_nic = ch03.dram_placement(rdma_gbs=50)
    assert slow_nic["pooled_readback_ms"] == pytest.approx(4 * slow_nic["local_readback_ms"])


def test_lora_adapter_by_hand_for_llama_3_8b():
    a = ch03.lora_adapter("llama-3-8b", rank=16)
    per_layer = (4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 3 * (4096 + 14336)
    assert a["params_m"] == pytest.approx(32 * 16 * per_layer / 1e6)
    assert a["adapter_mb"] == pytest.approx(2 * a["params_m"])
    assert ch03.lora_fit(100, gpu_slots_gb=1, dram_gb=10) == {"on_gpu": 10, "in_dram": 100}
    s = ch03.lora_swap(100, pcie_gbs=25, tpot_s=0.02)
    assert s["dram_ms"] == pytest.approx(4.0) and s["dram_steps"] == pytest.approx(0.2)
    base = ch03.lora_swap(100, pcie_gbs=25)                      # the base model's own step: its weight read
    step = presets.model("llama-3-8b").total_params * 2 / presets.gpu("h100-sxm").bandwidth
    assert base["step_ms"] == pytest.approx(step * 1e3) and base["dram_steps"] == pytest.approx(4e-3 / step)
    o = [ch03.lora_batch_overhead(k)["step_overhead"] for k in (1, 8, 32)]
    assert o[0] == pytest.approx(a["share_of_base"]) and o[2] == pytest.approx(32 * o[0])


def test_rollout_estimates():
    t = ch03.rollout_tokens(512, 16, 1000, 4000)
    assert t["sequences"] == 8192 and t["decode_tokens_m"] == pytest.approx(32.768)
    w = ch03.weight_sync(100, instances=10, sender_gbs=100, receiver_gbs=50, hop_s=0.01, disk_gbs=2)
    assert w["push_s"] == pytest.approx(10.0) and w["relay_s"] == pytest.approx(2.1) and w["checkpoint_s"] == 50


def test_rollout_wave_is_bound_by_its_longest_sample():
    few = ch03.rollout_wave(2, sequences=256, mean_output=400, max_output=3000)
    many = ch03.rollout_wave(8, sequences=256, mean_output=400, max_output=3000)
    assert few["sequences_per_instance"] == 128 and many["sequences_per_instance"] == 32
    assert many["makespan_s"] < few["makespan_s"]
    for w in (few, many):
        assert 400 < w["longest_tokens"] <= 3000 and w["longest_decode_s"] <= w["makespan_s"]
        assert w["longest_tpot_ms"] == pytest.approx(w["longest_decode_s"] / (w["longest_tokens"] - 1) * 1e3)
    assert many["longest_tpot_ms"] < few["longest_tpot_ms"]         # smaller batch, shorter steps
    with pytest.raises(ValueError):
        ch03.rollout_wave(0)


def test_rollout_sizing_by_hand():
    waves = [{"instances": 4, "sequences_per_instance": 100, "makespan_s": 400.0, "full_batch_tps": 1000.0},
             {"instances": 6, "sequences_per_instance": 67, "makespan_s": 280.0, "full_batch_tps": 900.0},
             {"instances": 8, "sequences_per_instance": 50, "makespan_s": 220.0, "full_batch_tps": 800.0}]
    s = ch03.rollout_sizing(waves, 300, sequences=400, mean_output=3000)
    assert s["sync_instances"] == 6 and s["full_batch_tps"] == 1000.0
    assert s["async_exact"] == pytest.approx(400 * 3000 / (1000 * 300)) and s["async_instances"] == 4
    assert ch03.rollout_sizing(waves, 100, 400, 3000)["sync_instances"] is None


def test_rollout_tail_shows_a_long_tail():
    r = ch03.rollout_tail(64, 500, 1000, cv=1.0, max_output=4000)
    assert r["t90_s"] < r["makespan_s"] and 0 < r["tail_efficiency"] < 1
    assert r["tokens_per_s_overall"] < r["tokens_per_s_to_t90"]
    flat = ch03.rollout_tail(64, 500, 1000, cv=0.05, max_output=4000)
    assert flat["tail_efficiency"] > r["tail_efficiency"]


# ---- simulations -------------------------------------------------------------------------------

def test_jittered_sessions_keep_turn_order_and_prefixes():
    w = ch03.sessions(2.0, 4, seconds=5)
    arr = np.array(w.arrival)
    assert np.all(np.diff(arr) >= 0)
    gaps = []
    for i, f in enumerate(w.follows):
        if f >= 0:
            assert f < i and w.session[f] == w.session[i]
            assert w.input_len[i] == w.input_len[f] + w.output_len[f] + 300
            assert w.prefix[i][-1][0] == w.prefix[f][-1][0]          # the session's key
            gaps.append(arr[i] - arr[f])
    assert 2.5 <= min(gaps) and max(gaps) <= 7.5 and np.std(gaps) > 0.5


def test_gateway_affinity_beats_round_robin_on_hits():
    rr = ch03.gateway("round_robin", 4, 3.0, seconds=8)
    pa = ch03.gateway("prefix_aware", 4, 3.0, seconds=8)
    sa = ch03.gateway("session_affinity", 4, 3.0, seconds=8)
    assert sa.hit > rr.hit + 0.2 and pa.hit > rr.hit + 0.2
    assert sum(rr.per_instance) == rr.requests and rr.retries == 0


def test_gateway_failure_retries_and_lowers_attainment():
    ok = ch03.gateway("least_requests", 4, 3.0, seconds=25)
    bad = ch03.gateway("least_requests", 4, 3.0, failure=True, seconds=25)
    assert bad.failure and bad.retries > 0 and bad.slo_ok <= ok.slo_ok
    assert bad.per_instance[0] < min(bad.per_instance[1:])
    with pytest.raises(ValueError):
        ch03.gateway("nearest", 4)


def test_pd_compare_rows():
    rows = ch03.pd_compare(20, layouts=((4, 0), (1, 3)), seconds=10)
    assert [r["layout"] for r in rows] == ["colocated x4", "PD 1:3"]
    assert all(0 <= r["slo_ok"] <= 1 and r["goodput_per_gpu"] > 0 for r in rows)
    for r in rows:                               # goodput per GPU can be at most the arrival rate per GPU
        assert r["goodput_per_gpu"] <= 20 * 1.1 / 32
        assert r["p99_ok"] == ("yes" if r["ttft_p99_s"] <= 2.0 and r["tpot_p99_ms"] <= 50 else "no")


def test_kv_tier_slow_link_recomputes_instead_of_reading_back():
    rows = {r["tiers"]: r for r in ch03.kv_tier_compare(ch03.KV_TIER_OPTIONS[1:])}
    gpu, fast, slow = rows["gpu"], rows["gpu+dram 200GB/s"], rows["gpu+dram 5GB/s"]
    assert slow == {**gpu, "tiers": slow["tiers"]}
    assert fast["host_hit"] > 0 and fast["hit"] > gpu["hit"] and fast["ttft_p99_ms"] < gpu["ttft_p99_ms"]


# ---- the panel, without a kernel -----------------------------------------------------------------

def test_panel_updates_from_its_controls():
    p = ch03.GatewayPanel(router="round_robin", instances=4, session_rate=1.0, failure=False, background=False)
    first = p.last
    assert first.router == "round_robin" and not first.failure
    assert p.chart.value.startswith("<svg") and "</svg>" in p.chart.value
    assert "前缀命中率" in p.figures.value and p.busy.value == ""
    p.controls["router"].value = "session_affinity"            # an observer reruns the simulation
    assert p.last.router == "session_affinity" and p.last.hit > first.hit
    p.controls["failure"].value = True
    assert p.last.failure and p.last.retries >= 0
    assert set(ch03.gateway_chart(p.last).labels()) >= {"请求数", "达标比例", "目标 99%", "故障", "发现故障"}


def test_panel_in_the_background_shows_the_latest_change_only():
    p = ch03.GatewayPanel(router="round_robin", instances=4, session_rate=1.0, failure=False, background=True)
    p.controls["router"].value = "least_requests"
    p.controls["router"].value = "session_affinity"             # supersedes the change before it
    p.wait()
    assert p.last.router == "session_affinity" and p.busy.value == ""
    assert p.update(current=lambda: False) is False and p.last.router == "session_affinity"


# ---- the executed notebook -----------------------------------------------------------------------

# Figures the prose quotes, each printed by some cell (as the prose writes it).
QUOTED = [
    "750,000", "400,000", "654", "17.1", "35,136", "109", "74.8", "9,168", "81.8", "96", "164",
    "9.98", "20,000", "104", "192", "49.5", "18.2", "18.7", "9.66", "0.365", "3,887", "56",
    "73,700", "14,800", "0.563", "227", "4,026", "1,850", "224", "200", "264", "792", "0.55", "552", "1.15",
    "3.62", "0.259", "0.518", "0.139", "0.289",
    "144", "4,989", "369", "32.5", "48.9", "0.44", "0.48", "6,538", "2,788", "0.71", "0.72", "2,200", "0.57",
    "105", "52.7", "2.11", "0.011", "0.0188", "0.0127", "48.6", "50.1", "112", "46.6", "35,136",
    "1.55", "1.70", "5.09", "36.8%", "54.9", "0.09", "2.02", "1.39", "68.6%", "17.5 ms", "1,473",
    "1.64", "8.19", "308", "915", "18,310", "34.1", "223", "7.35", "0.0625", "312", "14,640", "8.62",
    "22.1%", "0.67", "39,046", "69.8%", "0.92", "0.26", "108", "100.0%",
    "1.85", "0.938", "0.225", "0.45", "0.0625", "0.49", "1.01", "165", "294", "0.88", "31", "1.23", "0.86", "82", "1.02",
    "96.1%", "98.5%", "97.4%", "0.50", "4,856", "3,470", "3,907", "1.35", "99.0%", "1,280", "0.85", "1.16",
    "83.9", "95", "5,960", "4.79", "3.36", "0.7", "2.92", "67.1", "4.2%", "16.7%",
    "8,192", "32.8", "0.512", "98.8", "61.7", "0.375", "14,633", "9,886",
    "282", "332", "233", "14.6", "8.3", "134", "67", "25,264", "4.3",
    "1.06", "0.189", "35.3", "1,000",
]


def _notebook():
    return nbformat.read(NOTEBOOK, as_version=4)


def _outputs(nb) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                     if o.output_type == "stream")


def test_every_quoted_figure_is_printed_and_quoted():
    nb = _notebook()
    out = _outputs(nb)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    tokens = set(re.findall(r"\d[\d,]*(?:\.\d+)?%?", out)) | set(re.findall(r"\d[\d,]*(?:\.\d+)? ms", out))
    unprinted = [f for f in QUOTED if f not in tokens]
    unquoted = [f for f in QUOTED if f not in prose]
    assert not unprinted, f"quoted but no cell prints them: {unprinted}"
    assert not unquoted, f"in the list but the prose no longer quotes them: {unquoted}"


def test_percentages_in_the_prose_come_from_outputs():
    """Every 'NN.N%' the prose states is printed somewhere (the tables print one decimal)."""
    nb = _notebook()
    out = _outputs(nb)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for pct in set(re.findall(r"\d+\.\d%", prose)):
        assert pct in out, f"the prose says {pct}, no cell prints it"


def test_notebook_links_the_chapter_03_problems_and_has_a_judge_template():
    from practice import catalog
    nb = _notebook()
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    ids = [p.id for p in catalog.all_problems() if p.chapter == "03"]
    assert ids
    for pid in ids:
        assert f"| {pid} |" in prose, f"problem {pid} (chapter 03) is not linked"
    judge = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%judge")]
    assert len(judge) == 1 and "--examples" in judge[0].source.splitlines()[0]
    assert not any(o.output_type == "error" for o in judge[0].outputs)
    assert "思考题" in prose


def _pd_rows(out: str) -> dict:
    rows = re.findall(r"^(colocated x8|PD 2:6|PD 3:5)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s+(yes|no)$",
                      out, re.M)
    return {(name, int(rate)): (float(ttft), float(tpot), float(ok), float(good), p99) for name, rate, ttft, tpot, ok, good, p99
            in rows}


def test_the_prose_reads_the_pd_table_right():
    """Within capacity every layout's goodput per GPU is the arrival rate over 64 GPUs; the colocated
    layout still meets the P99 SLOs at 130 req/s (V1 prefix sharing among running requests keeps its
    TTFT tail short), both splits already miss them at 120, and the 3:5 split's goodput is capped by
    its decode pool (the same at 120 and 130)."""
    out = _outputs(_notebook())
    rows = _pd_rows(out)
    assert len(rows) == 12
    for rate in (100, 110):
        for name in ("colocated x8", "PD 2:6", "PD 3:5"):
            assert rows[name, rate][4] == "yes" and rows[name, rate][3] == pytest.approx(rate / 64, rel=0.02)
    for rate in (120, 130):
        assert rows["colocated x8", rate][4] == "yes" and rows["colocated x8", rate][2] == 100.0
        assert rows["colocated x8", rate][3] == pytest.approx(rate / 64, rel=0.02)
        assert rows["PD 2:6", rate][4] == rows["PD 3:5", rate][4] == "no"
        assert rows["colocated x8", rate][3] > max(rows["PD 2:6", rate][3], rows["PD 3:5", rate][3])
    assert rows["colocated x8", 130][0] < 2.0 / 10                      # far inside the 2 s TTFT SLO
    assert rows["PD 2:6", 120][0] > 2.0 and rows["PD 3:5", 120][1] > 50  # prefill pool vs decode pool
    assert rows["PD 3:5", 130][3] == rows["PD 3:5", 120][3]
    prose = "\n".join(c.source for c in _notebook().cells if c.cell_type == "markdown")
    assert "混合部署略好" not in prose and "分离部署的容量更低" in prose
    assert "混合部署至少 130" in prose and "已经超出 2 s 的 SLO" not in prose


def _gateway_rows(out: str, failure: str) -> dict:
    rows = re.findall(r"^(round_robin|least_requests|session_affinity|prefix_aware)\s+" + failure
                      + r"\s+([\d.]+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)%\s+([\d.]+)\s+(\d+)$", out, re.M)
    return {r: (float(hit), float(p50.replace(",", "")), float(p99.replace(",", "")), float(ok), float(imb), int(retries))
            for r, hit, p50, p99, ok, imb, retries in rows}


def test_the_prose_reads_the_failure_table_right():
    """With instance 0 failing every router still meets the SLOs for most requests and the
    low-hit routers keep their hit rate (running requests share the system prompt); what separates
    them is the TTFT tail (all over the 1 s SLO), where prefix-aware is shortest with the fewest
    retries, and session affinity has the highest hit rate but a long tail and the worst imbalance."""
    out = _outputs(_notebook())
    calm, hurt = _gateway_rows(out, "no"), _gateway_rows(out, "yes")
    assert len(calm) == len(hurt) == 4
    assert all(r[3] > 95 and r[2] > 1000 for r in hurt.values())
    for r in ("round_robin", "least_requests"):
        assert hurt[r][0] >= calm[r][0]
    best = min(hurt, key=lambda r: hurt[r][2])
    assert best == "prefix_aware" == min(hurt, key=lambda r: hurt[r][5]) == max(hurt, key=lambda r: hurt[r][3])
    assert max(hurt, key=lambda r: hurt[r][0]) == "session_affinity" == max(hurt, key=lambda r: hurt[r][4])
    assert hurt["session_affinity"][2] > 2 * hurt["prefix_aware"][2]
    prose = "\n".join(c.source for c in _notebook().cells if c.cell_type == "markdown")
    assert "四种路由都大体扛住了" in prose


def test_the_prose_reads_the_rollout_sizing_right():
    out = _outputs(_notebook())
    waves = {int(n): float(t) for n, t in re.findall(r"^(\d+)\s+\d+\s+[\d,]+\s+(\d+)\s+\d+\s+[\d.]+\s+\d+$", out, re.M)}
    assert sorted(waves) == [4, 5, 6, 7, 8, 11, 16]
    assert waves[5] > 300 >= waves[6]                      # six instances is the synchronous answer at 300 s
    sizing = re.findall(r"^(\d+)\s+(\d+|None)\s+(\d+)\s+[\d.]+\s+[\d,]+$", out, re.M)
    assert [(int(b), s, int(a)) for b, s, a in sizing][:3] == [(300, "6", 5), (200, "11", 7), (150, "16", 9)]
    assert "instances=6" in "".join(c.source for c in _notebook().cells if "weight_sync" in c.source)
