"""Chapter 04: the estimates in course/ch04.py by hand, its policy and simulations, the panel
without a kernel, and the executed notebook (in order, no errors, widget state saved, and every
key figure the prose quotes printed by a cell). Re-execute with
`PYTHONPATH=. python notebooks/run_notebooks.py 04`."""

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import pytest

from course import ch04, panel
from practice import catalog
from sim import presets
from sim.fleet import cold_start_s
from sim.fleet.autoscale import Signal
from sim.speculative import Speculative
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel, has_svg_chart
from chapter_notebook import code_cells as _code, checked_cells, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "04-design-answers-2.ipynb"


# --- Q6 ---------------------------------------------------------------------------------------

def test_kv_per_token_by_hand():
    assert ch04.kv_bytes_per_token("deepseek-v3", "fp8") == 61 * (512 + 64)
    assert ch04.kv_bytes_per_token("deepseek-v3", "bf16") == 2 * 61 * (512 + 64)
    assert ch04.kv_bytes_per_token("deepseek-v3", "fp8", tp=8) == 8 * 61 * (512 + 64)   # replicated latent
    assert ch04.kv_bytes_per_token("llama-3.1-405b", "fp8") == 2 * 126 * 8 * 128
    assert ch04.kv_bytes_per_token("llama-3.1-405b", "fp8", tp=8) == 2 * 126 * 8 * 128  # heads split
    assert ch04.kv_gb("llama-3.1-405b", 2**20) == pytest.approx(2**20 * 258048 / 1e9)


@pytest.mark.parametrize("n, k", [(10, 3), (1, 1), (7, 7), (100, 1), (50, None), (5, 99)])
def test_attention_pairs_counts_every_pair(n, k):
    assert ch04.attention_pairs(n, k) == sum(min(i + 1, k or n) for i in range(n))


def test_prefill_flops_and_time():
    m = presets.model("llama-3.1-405b")
    linear, attention = ch04.prefill_flops("llama-3.1-405b", 1000)
    assert linear == pytest.approx(2 * (m.active_params - m.embedding_params) * 1000)
    assert attention == pytest.approx(4 * 126 * 128 * 128 * 1000 * 1001 / 2)
    assert ch04.prefill_s(1.2e18, 8, "h200", "fp8", 0.4) == pytest.approx(1.2e18 / (8 * 1979e12 * 0.4))
    _, sparse = ch04.prefill_flops("deepseek-v3", 2**20, 2048)
    _, dense = ch04.prefill_flops("deepseek-v3", 2**20)
    assert sparse < dense / 200


def test_dsa_indexer_is_light_but_quadratic():
    assert ch04.indexer_flops_per_pair() == 2 * 61 * 64 * 128
    assert ch04.absorbed_flops_per_pair() == 2 * 61 * 128 * (576 + 512)
    n = 2**20
    d = ch04.dsa_prefill_s(n, gpus=8)
    g = presets.gpu("h200")
    assert d["indexer_s"] == pytest.approx(2 * 61 * 64 * 128 * n * (n + 1) / 2 / (8 * g.flops("fp8") * 0.4))
    assert d["sparse_attention_s"] == pytest.approx(
        ch04.absorbed_flops_per_pair() * ch04.attention_pairs(n, 2048) / (8 * g.flops("bf16") * 0.6))
    assert d["total_s"] == pytest.approx(d["linear_s"] + d["indexer_s"] + d["sparse_attention_s"])
    half = ch04.dsa_prefill_s(n // 2, gpus=8)
    assert d["indexer_s"] == pytest.approx(4 * half["indexer_s"], rel=1e-5)      # quadratic in the length
    assert d["indexer_share"] > half["indexer_share"] > 0.5


def test_dsa_caches_by_hand():
    assert ch04.V32_LATENT_BYTES == 656 and ch04.INDEX_KEY_BYTES == 132      # FlashMLA's FP8 format; key + scale
    assert ch04.dsa_index_gb(2**20) == pytest.approx(2**20 * 61 * 132 / 1e9)
    assert ch04.dsa_latent_gb(2**20) == pytest.approx(2**20 * 61 * 656 / 1e9)
    assert ch04.dsa_latent_gb(2**20) > ch04.kv_gb("deepseek-v3", 2**20)      # scales and a BF16 RoPE part
    # V3.2's two caches for one 1M-token request exceed what a TP=8 node leaves per GPU
    assert ch04.dsa_latent_gb(2**20) + ch04.dsa_index_gb(2**20) > ch04.free_kv_gb_per_gpu("deepseek-v3")


def test_free_memory_and_decode_reads_by_hand():
    g = presets.gpu("h200")
    assert ch04.free_kv_gb_per_gpu("deepseek-v3") == pytest.approx(
        (0.9 * g.memory - presets.model("deepseek-v3").total_params / 8) / 1e9)
    assert ch04.free_kv_gb_per_gpu("deepseek-v3") // (ch04.kv_gb("deepseek-v3", 2**20, tp=8) / 8) == 1
    assert ch04.decode_kv_read_ms("deepseek-v3", 2**20) == pytest.approx(2**20 * 61 * 576 / g.bandwidth * 1e3)
    assert ch04.decode_kv_read_ms("llama-3.1-405b", 2**20) == pytest.approx(2**20 * 258048 / 8 / g.bandwidth * 1e3)
    assert ch04.decode_kv_read_ms("deepseek-v3", 2**20, indexer_only=True) == pytest.approx(
        (2**20 * 61 * 132 + 2048 * 61 * 656) / g.bandwidth * 1e3)


# --- Q7 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("k, alpha, cost", [(1, 0.5, 0.0), (4, 0.8, 0.05), (12, 0.95, 0.3)])
def test_closed_form_matches_the_simulators(k, alpha, cost):
    assert ch04.tokens_per_step(k, alpha) == pytest.approx(sum(alpha ** i for i in range(k + 1)))
    assert ch04.spec_speedup(k, alpha, cost) == pytest.approx(Speculative(k, alpha, cost).speedup())


def test_best_draft_length_grows_with_acceptance():
    ks = [ch04.best_draft_length(a, 0.05)[0] for a in (0.6, 0.7, 0.8, 0.9)]
    assert ks == [4, 6, 8, 13]
    assert ch04.best_draft_length(0.8, 0.3)[0] < ch04.best_draft_length(0.8, 0.05)[0]


def test_simulated_speedup_matches_the_formula_at_low_load_and_shrinks_with_load():
    base = panel.chapter_setup()
    pts = ch04.spec_vs_load(base, 4, 0.8, 0.05)
    assert pts[0].clients == 1 and pts[0].speedup == pytest.approx(ch04.spec_speedup(4, 0.8, 0.05), rel=0.03)
    speedups = [p.speedup for p in pts]
    assert speedups == sorted(speedups, reverse=True)
    assert speedups[-1] < 1 < speedups[-2]
    k, s = ch04.simulated_best_k(base, 0.6, 0.05)
    assert k == ch04.best_draft_length(0.6, 0.05)[0] and s == pytest.approx(1.92, abs=0.05)


def test_capacity_at_a_tight_tpot_grows_with_speculation_and_stops_when_compute_bound():
    base = panel.chapter_setup()
    tight = ch04.capacity_at_tpot(base, 0.005, clients=(1, 4, 16, 32, 64))
    plain16 = ch04.closed_loop_run(base, 16)
    assert tight["plain_users"] == 16 and tight["plain_tps"] == plain16["tokens_per_s"]
    assert tight["spec_users"] >= 16 and tight["gain"] > 2
    loose = ch04.capacity_at_tpot(base, 0.05, clients=(64, 256))
    assert loose["plain_users"] == loose["spec_users"] == 256 and loose["gain"] < 1
    assert ch04.capacity_at_tpot(base, 0.003, clients=(1, 16))["gain"] is None     # plain meets it for nobody


# --- Q8 ---------------------------------------------------------------------------------------

def test_mask_and_step_times():
    assert ch04.mask_s(100_000, 10, 20) == pytest.approx(100_000 * 10 * 20e-9)
    assert ch04.mask_s(100_000, 10, 20, 0.01, 4) == pytest.approx(100_000 * 10 * 20e-9 * 0.01 / 4)
    base = panel.chapter_setup()
    assert ch04.decode_step_s(base, 64, 2500) == pytest.approx(base.step_time(64, 64 * 2500))


# --- Q9 ---------------------------------------------------------------------------------------

def test_cold_starts_are_the_simulators():
    got = ch04.cold_starts(70.6e9, 60)
    for source, s in got.items():
        assert s == cold_start_s(70.6e9, source, 60)
    assert got["peer_gpu"] < got["local_nvme"] < got["network_storage"]


def test_little_and_spares():
    assert ch04.little_outstanding(13.4, 6.5) == pytest.approx(87.1)
    assert ch04.instances_for(623, 87) == 8 and ch04.instances_for(87, 87) == 1
    assert ch04.warm_spares(0.157, 131, 13.44) == 2 and ch04.warm_spares(0.0, 131, 13.4) == 0


def _signal(outstanding, up=2, starting=0):
    return Signal(0.0, up, starting, outstanding, [0.0] * up)


def test_stabilized_scales_up_at_once_and_down_slowly():
    p = ch04.Stabilized(target=10, spares=1, down_ticks=3)
    assert p.desired(_signal(45, up=2)) == 6                  # ceil(45 / 10) + 1 spare
    assert [p.desired(_signal(5, up=6)) for _ in range(3)] == [6, 6, 5]
    assert p.desired(_signal(5, up=5)) == 5                   # the window starts again
    with pytest.raises(ValueError):
        ch04.Stabilized(target=0)


# --- Q10 --------------------------------------------------------------------------------------

def test_region_pools_use_chapter_03s_unit():
    from course import ch03
    normal = ch04.region_pd_pools(1800, 3, 2000, 500, survive_region_loss=False)
    loss = ch04.region_pd_pools(1800, 3, 2000, 500)
    assert normal["region_qps"] == 600 and loss["region_qps"] == 900
    assert loss["prefill_gpus"] == ch03.moe_prefill_gpus(900, 2000, prefix_hit=0.0)["gpus"]
    assert loss["decode_gpus"] == ch03.moe_decode_gpus(900, 2000, 500)["gpus"]
    assert loss["prefill_gpus"] % 32 == 0 and loss["decode_gpus"] % 8 == 0
    assert loss["all_regions_gpus"] == 3 * loss["gpus"] > normal["all_regions_gpus"]


def test_distribution_and_region_sizing():
    w = 671e9
    assert ch04.distribution_s(w, 1, 12.5) == pytest.approx(w / 12.5e9)
    assert ch04.distribution_s(w, 4, 12.5, 50) == pytest.approx(w / 12.5e9 + 2 * w / 50e9)
    assert ch04.distribution_s(w, 5, 12.5, 50) == pytest.approx(w / 12.5e9 + 3 * w / 50e9)
    assert ch04.naive_distribution_s(w, 12, 25) == pytest.approx(12 * w / 25e9)
    assert ch04.per_region_instances(180, 3, 25.8, survive_region_loss=False) == 3
    assert ch04.per_region_instances(180, 3, 25.8) == 4
    assert ch04.per_region_instances(180, 4, 25.8) == 3


def test_table_pads_columns():
    text = ch04.table(["a", "bb"], [("x", 1), ("yyyy", 22)]).splitlines()
    assert text[0] == "a     bb" and text[1] == "----  --" and text[3] == "yyyy  22"


# --- The panel --------------------------------------------------------------------------------

def test_panel_updates_from_its_sliders():
    p = ch04.spec_panel()
    assert p.values() == ch04.PANEL_DEFAULTS
    rows = dict(p.rows)
    assert rows["低负载加速比（公式）"] == "2.80x"
    assert rows["这个接受率下最好的 k（公式）"] == "k = 8，3.09x"
    assert "</svg>" in p.chart.value
    assert {"speedup (simulated)", "closed form (low load)", "no gain (1x)"} <= set(p.figure.labels())
    p.controls["clients"].value = 256
    assert float(dict(p.rows)["256 个并发用户：TPOT 加速比（模拟）"].rstrip("x")) < 1
    p.controls["alpha"].value = 0.6
    assert dict(p.rows)["低负载加速比（公式）"] == f"{ch04.spec_speedup(4, 0.6, 0.05):.2f}x"
    x, y = p.figure.line_data("speedup (simulated)")
    assert list(x) == list(ch04.CLIENTS) and y[0] > y[-1]
    assert p.last_update_s < 5


# --- The executed notebook --------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel(nb):
    assert has_svg_chart(assert_saved_one_panel(nb, "spec_panel()"))


def test_checked_cells_and_chinese_prose(nb):
    checked = checked_cells(nb)
    assert len(checked) >= 8
    han = han_chars(nb)
    assert han > 3000
    for q in ("第 6 题", "第 7 题", "第 8 题", "第 9 题", "第 10 题", "思考题"):
        assert q in _prose(nb)


def test_links_every_chapter_04_problem_and_has_a_judge_cell(nb):
    ids = [p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "04"]
    assert sorted(ids) == [152, 169, 175, 178]
    for pid in ids:
        assert f"judge.py start {pid}" in _prose(nb)
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and "--examples" in judge[0].source.splitlines()[0]
    assert any("%load_ext practice" in c.source for c in _code(nb))


# Figures the prose quotes, each as the prose writes it and as a cell prints it.
QUOTED = [
    ("270.6 GB", "270.6 GB"), ("36.8 GB", "36.8 GB"), ("33.8 GB", "33.8 GB"),
    ("43.0 GB", "43.0 GB"), ("76.2 GB", "76.2 GB"), ("放下**一个** 1M token", "36.8 GB                     1"),
    ("潜向量 42.0 GB", "FP8 format 42.0 GB"), ("656 字节", "(656 B per layer)"), ("132 字节", "(132 B per layer)"),
    ("索引器的键 8.4 GB", "indexer keys 8.4 GB"), ("每卡要 50.4 GB", "50.4 GB                     0"),
    ("97%", "97%"), ("446 s", "446 s"), ("851 s", "851 s"),
    ("线性层 12.1 s", "12.1 s"), ("索引器 86.8 s", "86.8 s"), ("稀疏主注意力 7.7 s", "7.7 s"), ("106.6 s", "106.6 s"),
    ("81%", "81%"), ("7.7 ms", "7.7 ms"), ("7.0 ms", "7.0 ms"), ("1.8 ms", "1.8 ms"), ("1.3 ms", "1.3 ms"),
    ("1.82x～1.87x", "1.82x / 1.87x"), ("约 118 个 token", "about 118 tokens"), ("约 24 个用户", "24 users verifying"),
    ("2.80x", "2.80x"), ("3.09x", "3.09x"), ("1.96x", "1.96x"), ("1.20x", "1.20x"), ("0.94x", "0.94x"),
    ("1.93x", "1.93x"), ("2.36x", "2.36x"), ("3.05x", "3.05x"), ("4.53x", "4.53x"),
    ("4.1 ms", "4.1 ms"), ("1.5 ms", "1.5 ms"), ("8,661", "8,661"), ("8,048", "8,048"),
    ("2,846", "2,846"), ("5,466", "5,466"), ("4.8 ms", "4.8 ms"), ("2.5 ms", "2.5 ms"),
    ("2.43x", "2.43x"), ("1.34x", "1.34x"), ("1.18x", "1.18x"), ("0.99x", "0.99x"), ("0.93x", "0.93x"),
    ("带 16 个用户", "3 ms                 0               0           16"),
    ("不开也能装下 128 个用户", "15 ms              128"),
    ("656.7 ms", "656.7 ms"), ("8.0 ms", "8.0 ms"), ("2.6 ms", "2.6 ms"), ("约 6.6 ms", "6,567 us"),
    ("116.5 s", "116.5 s"), ("61.4 s", "61.4 s"), ("约 87 个", "= 87 requests"), ("约 623 个", "623 outstanding"),
    ("需要 8 个实例", "-> 8 instances"), ("0.0026 req/s", "0.0026 req/s"), ("0.34 req/s", "= 0.34 req/s"),
    ("一个实例的 0.03", "0.03 instances"), ("要 2 个热备", "+20 req/s within a minute -> 2 warm spares"),
    ("0.157 req/s", "0.157 req/s"), ("这样的爬坡要 2 个热备", "per s -> 2 warm spares"), ("86,419", "86,419"),
    ("64.1%", "64.1%"), ("3.0%", "3.0%"), ("28.3", "28.3"), ("87.9%", "87.9%"), ("15 个实例", "  15\n"),
    ("24.2", "24.2"), ("99.3%", "99.3%"), ("19.8", "19.8"), ("99.9%", "99.9%"), ("19.9", "19.9"),
    ("峰值只要 10 个", "  10\n"), ("100.0%", "100.0%"), ("18.9", "18.9"), ("98.8%", "98.8%"),
    ("24.6 req/s", "24.6 req/s"), ("从 3 个变成 4 个", "3 instances per region"), ("72 张变成 96 张", "96 GPUs"),
    ("= 1.50 倍", "capacity needed x1.50"), ("只多了 1.33 倍", "instances x1.33"), ("只要 2.44 个实例", "= 2.44 instances"),
    ("从 208 张卡变成 312 张", "  208  "), ("从 624 张变成 936 张", "936"), ("正好 1.50 倍", "costs x1.50 the GPUs"),
    ("5.4 min", "5.4 min"), ("1.3 min", "1.3 min"), ("43,200", "43,200"),
    ("每个 30.0 req/s", "30.0"), ("每个 22.5 req/s", "22.5"), ("0.0%", "0.0%"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"


def test_speedup_rows_printed_match_the_closed_form(nb):
    out = _stdout(nb)
    for alpha in (0.6, 0.7, 0.8, 0.9):
        k, s = ch04.best_draft_length(alpha, 0.05)
        assert re.search(rf"^{alpha}\s+{k}\s+\S+\s+{s:.2f}x", out, re.M)


def test_the_prose_reads_the_low_load_table_right(nb):
    """Simulated above the formula for alpha 0.6 and 0.7, below it for 0.8 and 0.9, within 3%."""
    out = _stdout(nb)
    rows = re.findall(r"^(0\.\d)\s+\d+\s+(\d\.\d\d)x\s+\d+\s+(\d\.\d\d)x$", out, re.M)
    got = {float(a): (float(f), float(sim)) for a, f, sim in rows}
    assert sorted(got) == [0.6, 0.7, 0.8, 0.9]
    assert all(got[a][1] > got[a][0] for a in (0.6, 0.7)) and all(got[a][1] < got[a][0] for a in (0.8, 0.9))
    assert all(abs(sim / f - 1) <= 0.03 for f, sim in got.values())
    assert "模拟略高" in _prose(nb) and "略低" in _prose(nb) and "模拟稍低一点" not in _prose(nb)
