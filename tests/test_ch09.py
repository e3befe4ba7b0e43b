"""Chapter 09 (parallelism): the helpers in course/ch09.py by hand and against sim, the panel
without a kernel, and the executed notebook (in order, no errors, widget state saved, every figure
the prose quotes printed by a cell). Re-execute with
`PYTHONPATH=$PWD python notebooks/run_notebooks.py 09`."""

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import numpy as np
import pytest

from course import ch05, ch09
from practice import catalog
from sim import plan, presets
from sim.presets.models import MODELS
from sim.setup import attention_pairs
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel, has_svg_chart
from chapter_notebook import code_cells as _code, checked_cells, figures, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "09-parallelism.ipynb"
PROBLEMS = (135, 136, 137, 138, 139, 144, 145, 161, 162)


# --- all-reduce ----------------------------------------------------------------------------------

def test_allreduce_algorithms_by_hand():
    # 8 GPUs, 1 MiB, 2 us a round, 450 GB/s: once = 1048576 / 450e3 us
    once = 1048576 / 450e3
    t = {a: ch09.allreduce_us(a, 1048576, 8, alpha_us=2.0, link_gbs=450) for a in ch09.ALGORITHMS}
    assert t["one_shot"] == pytest.approx(2 + 7 * once)
    assert t["two_shot"] == pytest.approx(4 + 1.75 * once)
    assert t["ring"] == pytest.approx(28 + 1.75 * once)
    assert t["tree"] == pytest.approx(12 + 2 * once)
    assert t["nvls"] == pytest.approx(4 + once)
    with pytest.raises(ValueError, match="algorithm"):
        ch09.allreduce_us("butterfly", 1, 8, link_gbs=1)
    with pytest.raises(ValueError, match="gpus"):
        ch09.allreduce_us("ring", 1, 1, link_gbs=1)


def test_best_algorithm_follows_size_and_topology():
    assert ch09.best_algorithm(16384, 8, "h100-sxm")[0] == "one_shot"        # latency wins
    assert ch09.best_algorithm(2**27, 8, "h100-sxm")[0] == "nvls"            # bytes win, switch sums
    assert ch09.best_algorithm(2**27, 8, "a100-80gb")[0] == "two_shot"       # no NVLS on A100
    assert ch09.topology("l40s") == "pcie" and ch09.best_algorithm(2**27, 8, "l40s")[0] in ("ring", "tree")
    assert ch09.link_gbs("h100-sxm") == 450


def test_the_preset_charges_the_measured_table_at_the_steps_size():
    m = MODELS["llama-3-70b"]
    for tp in (2, 4, 8):
        table = ch09.kernel_table_allreduce_us("h100-sxm", tp)
        alpha, beta = ch09.measured_allreduce("h100-sxm", tp)
        s = presets.instance("llama-3-70b", "h100-sxm", tp=tp, weight_dtype="fp8", kv_dtype="fp8")
        r = ch09.comm_row("llama-3-70b", "h100-sxm", tp, 64)          # 64 x 16 KiB = 1 MiB, a table size
        assert r.comm_ms == pytest.approx(2 * m.layers * table[2**20] / 1e3, rel=1e-12)
        assert r.comm_ms == pytest.approx(s.comm_seconds(64) * 1e3, rel=1e-12)
        assert r.line_ms == pytest.approx(2 * m.layers * (alpha + 2**20 / beta) * 1e3, rel=1e-12)
        assert r.step_ms == pytest.approx(s.step_time(64, 64 * ch09.CONTEXT, 0, 64) * 1e3)
    chunk = ch09.comm_row("llama-3-70b", "h100-sxm", 8, 8192)
    s8 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    assert chunk.step_ms == pytest.approx(s8.step_time(8192, 0, attention_pairs(0, 8192)) * 1e3)
    assert chunk.comm_ms < chunk.line_ms                        # the line over-charges large messages
    amd = ch09.comm_row("llama-3-70b", "mi300x", 8, 64)         # no table: the line is what it charges
    assert amd.comm_ms == amd.line_ms
    assert ch09.bus_bandwidth_gbs(100, 8) == pytest.approx(175)


def test_kernel_table_and_its_line():
    table = ch09.kernel_table_allreduce_us("h100-sxm", 8)
    assert 16384 in table and 2**27 in table
    alpha, beta = ch09.measured_allreduce("h100-sxm", 8)
    # the line passes near the table in its middle and departs from it at both ends (the chapter's point)
    assert table[2**24] == pytest.approx((alpha + 2**24 / beta) * 1e6, rel=0.1)
    assert ch09.measured_allreduce_us("h100-sxm", 8, 2**20) < table[2**20]
    assert ch09.measured_allreduce_us("h100-sxm", 8, 2**27) > table[2**27]
    with pytest.raises(ValueError, match="mi300x"):
        ch09.kernel_table_allreduce_us("mi300x", 8)
    with pytest.raises(ValueError, match="gb200 at tp=8"):
        ch09.kernel_table_allreduce_us("gb200", 8)                # measured at tp 2 and 4 only


# --- tensor parallelism --------------------------------------------------------------------------

def test_tp_row_is_sim_plan_and_agrees_with_chapter_05():
    r = ch09.tp_row("llama-3-70b", "h100-sxm", 4, "fp8")
    s = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8", kv_dtype="fp8")
    p = plan(200, s, 2000, 500, ttft_slo=2.0, tpot_slo=0.05, gpus_per_instance=4, gpu_hour_usd=2.5)
    assert (r.rate, r.gpus, r.usd_per_million, r.bound) == (p.rate_per_instance, p.gpus,
                                                            p.usd_per_million_output_tokens, p.bound)
    assert r.tokens_per_gpu_s == p.rate_per_instance * 500 / 4
    assert r.tpot_b1_ms == s.step_time(1, ch09.CONTEXT, 0, 1) * 1e3
    c5 = ch05.cost_row("llama-3-70b", "h100-sxm", 4, "fp8", "fp8")
    assert (c5.rate, c5.gpus) == (r.rate, r.gpus)


def test_infeasible_rows_keep_their_reason():
    lone = ch09.tp_row("llama-3-70b", "h100-sxm", 1, "bf16")
    assert not lone.feasible and lone.tpot_b1_ms is None and "does not fit" in lone.reason
    tight = ch09.tp_row("llama-3-70b", "h100-sxm", 2, "fp8", tpot_slo=0.015)
    assert not tight.feasible and tight.tpot_b1_ms > 15 and "lone request" in tight.reason
    assert ch09.tp_cells(tight)[3:7] == ["-"] * 4
    assert ch09.cheapest_tp([lone, tight]) is None


def test_decode_frontier_and_ceiling():
    pts = ch09.decode_frontier("llama-3-70b", "h100-sxm", 8)
    s = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    b, step_ms, per_gpu = pts[3]
    assert step_ms == pytest.approx(s.step_time(b, b * ch09.CONTEXT, 0, b) * 1e3)
    assert per_gpu == pytest.approx(b / (step_ms / 1e3) / 8)
    batch, tput = ch09.decode_ceiling("llama-3-70b", "h100-sxm", 4, 30)
    s4 = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8", kv_dtype="fp8")
    assert ch05.decode_step_s(s4, batch, ch09.CONTEXT) <= 0.030 < ch05.decode_step_s(s4, batch + 1, ch09.CONTEXT)
    assert ch09.decode_ceiling("llama-3-70b", "h100-sxm", 2, 15) is None


def test_prefill_cost_per_token_grows_with_tp():
    costs = [ch09.prefill_gpu_ms_per_token("llama-3-70b", "h100-sxm", tp) for tp in (2, 4, 8)]
    assert costs == sorted(costs)


# --- pipeline, expert and context parallelism ----------------------------------------------------

def test_bubble_fraction_by_hand():
    assert ch09.bubble_fraction(1, 5) == 0
    assert ch09.bubble_fraction(8, 63) == pytest.approx(0.1)
    assert ch09.bubble_fraction(4, 1) == 0.75
    with pytest.raises(ValueError, match="microbatches"):
        ch09.bubble_fraction(4, 0)


def test_pp_decode_is_the_tp_step_plus_hand_offs():
    s = presets.instance("llama-3-70b", "h100-sxm", tp=2, weight_dtype="fp8", kv_dtype="fp8")
    r = ch09.pp_decode("llama-3-70b", "h100-sxm", 2, 4, 16)
    hop = 5e-3 + 16 * 8192 * 2 / 450e9 * 1e3
    assert r.tpot_ms == pytest.approx(ch05.decode_step_s(s, 16, ch09.CONTEXT) * 1e3 + 3 * hop)
    assert r.tokens_per_gpu_s == pytest.approx(4 * 16 / r.tpot_ms * 1e3 / 8)
    one = ch09.pp_decode("llama-3-70b", "h100-sxm", 8, 1, 16)
    assert abs(r.kv_tokens - one.kv_tokens) < 10            # same eight GPUs' memory
    lay = ch09.pp_layout("llama-3-70b", "h100-sxm", 2, 4)
    whole = s.step_time(8192, 0, attention_pairs(0, 8192)) * 1e3
    assert lay.lone_prompt_ms == pytest.approx(whole * 11 / 32)
    cross = ch09.cross_node_step_ms("llama-3.1-405b", 64)
    assert cross["tp_all_ms"] > 1000 * cross["pp_between_ms"]


def test_all_to_all_by_hand():
    m = MODELS["deepseek-v3"]
    a = ch09.all_to_all(256, tokens_per_gpu=128)
    assert a.copies == pytest.approx(255 * 8 / 256)          # one expert per GPU: P(hit) = 8/256
    assert a.dispatch_us == pytest.approx(128 * a.copies * m.hidden * (1 + 4 / 128) / 50e3)
    assert a.combine_us == pytest.approx(128 * a.copies * m.hidden * 2 / 50e3)
    assert a.step_ms == pytest.approx(58 * (a.dispatch_us + a.combine_us) / 1e3)
    assert ch09.gpu_hit_prob(256, 8, 32) == pytest.approx(1 - math.comb(248, 8) / math.comb(256, 8))
    with pytest.raises(ValueError, match="divide"):
        ch09.gpu_hit_prob(256, 8, 144)
    assert ch09.experts_per_gpu(256, 32, 144) == 2


def test_eplb_replicates_hot_experts_and_balances():
    loads = [90, 10, 10, 10]
    assert ch09.replicate(loads, 2) == [3, 1, 1, 1]
    held = ch09.place(loads, 2, 2)                            # 6 copies, 3 per GPU
    assert sorted(len(h) for h in held) == [3, 3]
    assert ch09.gpu_loads(loads, held).sum() == pytest.approx(120)
    assert ch09.imbalance(loads, held) < ch09.imbalance(loads, ch09.place(loads, 2))
    assert ch09.imbalance(loads, ch09.place(loads, 2)) == pytest.approx(100 / 60)
    with pytest.raises(ValueError, match="multiple"):
        ch09.place(loads, 3, 0)
    assert ch09.single_copy_gpu_share([[0, 1], [0, 2]], 3) == 1.0
    assert ch09.single_copy_gpu_share([[0, 1], [0, 1]], 2) == 0.0
    synth = ch09.synthetic_loads(seed=0)
    assert synth.sum() == 65536 * 8 and np.array_equal(synth, ch09.synthetic_loads(seed=0))


def test_lse_merge_equals_one_softmax_and_ring_threshold():
    assert ch09.lse_demo() < 1e-12
    m, g = MODELS["llama-3-70b"], presets.gpu("h100-sxm")
    assert ch09.ring_overlap_tokens("llama-3-70b", "h100-sxm", 450) == pytest.approx(
        2 * m.kv_heads * 2 * g.bf16_flops * 0.5 / (4 * m.heads * 450e9))
    one = ch09.long_prefill_s("llama-3-70b", "h100-sxm", 8, 16384)
    s = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    assert one == pytest.approx(s.step_time(8192, 0, attention_pairs(0, 8192))
                                + s.step_time(8192, 8192, attention_pairs(8192, 8192)))


# --- the panel -----------------------------------------------------------------------------------

def test_panel_answers_from_plan_and_moves_with_its_controls():
    p = ch09.parallel_panel()
    a = p.answer
    assert a.row == ch09.tp_row("llama-3-70b", "h100-sxm", 8, "fp8")
    assert f"{a.row.gpus} 张卡" in p.table.value and "</svg>" in p.chart.value
    assert set(p.figure.labels()) == {"TP1", "TP2", "TP4", "TP8", "TPOT SLO"}
    p.controls["pp"].value = 2
    assert "算术估计" in p.table.value and p.answer.tpot_b1_ms > a.tpot_b1_ms
    assert f"{ch09.pp_gpus(a.row, 2)} 张卡" in p.table.value
    assert ch09.pp_gpus(a.row, 2) == math.ceil(a.row.gpus / 16) * 16 and ch09.pp_gpus(a.row, 1) == a.row.gpus
    p.controls["pp"].value = 1
    p.controls["gpu"].value = "a100-80gb"
    assert "不可行" in p.table.value and "FP8" in p.table.value
    p.controls["weight_dtype"].value = "bf16"
    p.controls["tp"].value = 4
    assert p.answer.row.feasible and p.answer.algorithm == "two_shot"
    p.controls["model"].value = "llama-3.1-405b"
    p.controls["gpu"].value = "h100-sxm"
    p.controls["pp"].value = 2
    assert "不可行" in p.table.value and "1/PP 的层" in p.table.value


# --- the executed notebook -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel(nb):
    assert has_svg_chart(assert_saved_one_panel(nb, "parallel_panel()"))


def test_checked_cells_figure_and_chinese_prose(nb):
    checked = checked_cells(nb)
    assert len(checked) >= 10
    assert figures(nb) >= 1
    han = han_chars(nb)
    assert han > 3000
    for heading in ("all-reduce", "TP 1～8", "已发表的测量", "流水线", "专家并行", "上下文并行", "面板", "思考题", "练习"):
        assert heading in _prose(nb)


def test_links_every_chapter_09_problem_and_has_a_judge_cell(nb):
    ids = set(PROBLEMS) | {p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "09"}
    for pid in ids:
        assert f"judge.py start {pid}`" in _prose(nb), pid
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and judge[0].source.splitlines()[0] == "%%judge 139 --examples"
    assert any("%load_ext practice" in c.source for c in _code(nb))


# Figures the prose quotes, each as the prose writes it and as a cell prints it.
QUOTED = [
    # all-reduce
    ("one-shot 最快（2.3 us", "1       16 KiB      2.3 "), ("1 MiB（batch 64）实测 26.0 us", "26.0"),
    ("NVLS 只要 6.3 us", " 6.3 "), ("128 MiB 实测 575.5 us", "575.5"), ("233 GB/s 的算法带宽", "233 GB/s"),
    ("408 GB/s 的总线带宽", "408 GB/s"), ("1 MiB 时直线给 11.6 us", "11.6"), ("128 MiB 时给 934.5 us", "934.5"),
    ("一步 10.0 ms 里 0.57 ms 是 all-reduce（6%）", "0.57                   0.72         10.0     6%"),
    ("实测 26.0 us，160 次就是 4.15 ms", "4.15"), ("占这一步 15.7 ms 的 26%", "15.7     26%"),
    ("直线只给 1.86 ms", "1.86"), ("到 batch 256 占到 30%", "27.5     30%"),
    ("all-reduce 要 92.1 ms（33%）", "92.08"), ("all-reduce 要 92.1 ms（33%）", "283.2    33%"),
    ("直线会算成 149.5 ms", "149.52"), ("TP=2 时只占 12%", "653.5    12%"),
    # TP
    ("只有 74 token/s", " 74 "), ("$12.22", "$12.22"), ("208 张卡", " 208 "), ("$1.44", "$1.44"),
    ("TP=4 其次（224 张卡、$1.56）", " 224 "), ("TP=4 其次（224 张卡、$1.56）", "$1.56"),
    ("304 张卡、$2.11", " 304 "), ("304 张卡、$2.11", "$2.11"), ("TP=2 是 628", " 628 "),
    ("TP=8 只有 439", " 439 "), ("（$2.17）", "$2.17"), ("19.7 ms", "19.7"), ("1.23 req/s", "1.23"),
    ("还放得下 103 个序列", "30 ms       TP2  103 "), ("8192 token 一块 653.5 ms", "653.5"),
    ("成本也翻了一倍（$2.93）", "$2.93"), ("是 $2.83", "$2.83"), ("0.00 req/s", "19.7           0.00"),
    ("要 208438 张卡、每百万 token $1447.49", "208438  $1447.49"), ("仍是 TP=4（$4.14）", "$4.14"),
    ("TP=8 是 $4.56", "$4.56"), ("比 TP=4（6.8 ms）多", "13.2"), ("降到 10.0 ms", "10.0"),
    ("2368 和 2125", "2368"), ("2368 和 2125", "2125"), ("只有 1450", "1450"), ("TP=4 的 1066", "1066"),
    ("TP=8 的 850", " 850"), ("每卡 219 对 201", " 219 "), ("每卡 219 对 201", " 201 "),
    ("283.2 对 419.1 ms", "283.2"), ("283.2 对 419.1 ms", "419.1"),
    ("模拟 3049，实测 2608", "3049"), ("模拟 3049，实测 2608", "2608"),
    ("1490 对 1964", "1490"), ("1490 对 1964", "1964"), ("0.76～1.33", "0.76\n"), ("0.76～1.33", "1.33\n"),
    ("TP=4 只差 3%", "1.03\n"),
    # PP
    ("64 个微批才能压到 10%", "18%   10%"), ("88% 的时间在空等", "88%"), ("约 7.3 us", "7.3 us"),
    ("TPOT 是 21.2 ms", "21.2"), ("TP=8 的 15.7 ms", "TP8 x PP1  15.7"), ("377 对 508", " 377 "),
    ("377 对 508", " 508 "), ("TPOT 是 15.6 ms，和 TP=8 几乎一样", "TP4 x PP2  15.6"),
    ("0.160 GPU-ms", "0.160"), ("TP=8 要 0.277", "0.277"), ("3,160,744", "3,160,744"),
    ("95.4 ms 的通信", "95.4 ms"), ("0.05 ms", "0.05 ms"),
    # EP
    ("每卡 9 个路由专家", "= 9 routed"), ("decode 每卡 2 个", "= 2 routed"),
    ("dispatch 估 151 us、实测 194 us", " 151 "), ("combine 估 292 us、实测 360 us", " 292 "),
    ("0.77～0.95", "0.77"), ("0.77～0.95", "0.95"), ("EP32 时 7.04 份", "7.04"), ("EP256 时 7.97 份", "7.97"),
    ("加起来 25.7 ms", "25.7"), ("平均的 8.4 倍", "8.4 x"), ("max/mean = 1.82", "1.82"),
    ("EP64 时是 2.50", "2.50"), ("EP128 时是 4.39", "4.39"), ("1.00 和 1.01", "1.01"), ("降到 1.08", "1.08"),
    ("仍是 1.24", "1.24"), ("EP128 也有 88%", "88%"),
    # CP
    ("单实例要 8.54 s", "8.54 s"), ("约 137 个 token", "137 tokens"), ("1237 个", "1237 tokens"),
    ("最大差不到 1e-15", "max |difference| < 1e-15"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"


# The chapter's claims, checked against the tables the cells printed.

def _cell_stdout(nb, marker: str) -> str:
    cell = next(c for c in _code(nb) if marker in c.source)
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _rows(text: str, first: str) -> list:
    """The whitespace-split rows of the printed tables whose first cell starts with ``first``."""
    return [line.split() for line in text.splitlines() if line.startswith(first)]


def _money(cell: str) -> float:
    return float(cell.lstrip("$"))


def test_tp_costs_claims(nb):
    text = _cell_stdout(nb, "ch09.cheapest_tp(rows)")
    for slo, tp in ((50, 2), (30, 4), (20, 4)):
        assert f"cheapest at TPOT < {slo} ms: TP{tp}" in text
    # row cells: TP, SLO, "ms", TPOT b=1, req/s, tok/s/GPU, GPUs, $/1M, bound
    plan = {(int(r[1]), r[0]): r for r in _rows(text, "TP") if r[3] != "TPOT" and r[4] != "-"}
    assert 1.4 < _money(plan[50, "TP8"][7]) / _money(plan[50, "TP2"][7]) < 1.5            # "贵了四成多"
    assert _money(plan[50, "TP2"][7]) < _money(plan[50, "TP4"][7]) < _money(plan[50, "TP8"][7])  # "其次"
    assert 0.45 < float(plan[30, "TP2"][4]) / float(plan[50, "TP2"][4]) < 0.5               # "不到一半"
    assert 1.9 < _money(plan[30, "TP2"][7]) / _money(plan[50, "TP2"][7]) < 2.1             # "翻了一倍"
    tight = plan[20, "TP2"]                                                                # nominally feasible
    assert float(tight[3]) < 20 and float(tight[4]) < 0.005                                # "0.00 req/s"
    assert 0.08 < _money(plan[20, "TP8"][7]) / _money(plan[20, "TP4"][7]) - 1 < 0.12      # "贵约 10%"
    # the decode-only ceilings agree with the plan's order at 50 ms and at 20 ms
    ceil = {(int(r[0]), r[2]): float(r[-1]) for r in _rows(_cell_stdout(nb, "decode_ceiling"), "")
            if len(r) == 5 and r[-1] != "-" and r[0].isdigit()}
    per_gpu = {k: float(r[5]) for k, r in plan.items()}
    assert ceil[50, "TP2"] > ceil[50, "TP4"] > ceil[50, "TP8"]
    assert per_gpu[50, "TP2"] > per_gpu[50, "TP4"] > per_gpu[50, "TP8"]
    assert ceil[20, "TP4"] > ceil[20, "TP8"] and per_gpu[20, "TP4"] > per_gpu[20, "TP8"]
    share = {k: per_gpu[k] / ceil[k] for k in ceil if k in per_gpu and k[1] != "TP1"}
    assert all(0.25 < share[50, tp] < 0.35 for tp in ("TP2", "TP4", "TP8"))               # "三成左右"
    assert all(0.2 < share[20, tp] < 0.3 for tp in ("TP4", "TP8"))                         # "两成多"
    assert share[20, "TP8"] > share[20, "TP4"]                                             # TP8 keeps more
    assert (round(share[20, "TP8"] * 100), round(share[20, "TP4"] * 100)) == (24, 21)      # "24%，TP=4 是 21%"


def test_published_tensorrt_llm_comparison_claims(nb):
    rows = {r[0]: r for r in _rows(_cell_stdout(nb, "TRTLLM_70B_FP8_128"), "TP") if r[1][0].isdigit()}
    sim_, pub = ({tp: float(r[i]) for tp, r in rows.items()} for i in (1, 2))
    assert max(sim_, key=sim_.get) == max(pub, key=pub.get) == "TP2"
    assert min(sim_, key=sim_.get) == min(pub, key=pub.get) == "TP8"
    ratios = [float(r[3]) for r in rows.values()]
    assert (min(ratios), max(ratios)) == (0.76, 1.33) and float(rows["TP4"][3]) == 1.03
    errors = {tp: abs(float(r[3]) - 1) for tp, r in rows.items()}
    assert sorted(errors, key=errors.get)[-2:] == ["TP8", "TP1"]                         # "两头差得最多"
    assert 0.2 < 1 - pub["TP8"] / pub["TP2"] < 0.3 < 0.5 < 1 - sim_["TP8"] / sim_["TP2"] < 0.55  # "四分之一" vs "一半多"


def test_pipeline_claims(nb):
    rows = {r[0]: r for r in _rows(_cell_stdout(nb, "ch09.pp_layout"), "TP") if "x" in r}
    tp8, tp2pp4 = rows["TP8"], rows["TP2"]                           # "TP8 x PP1", "TP2 x PP4"
    assert float(tp2pp4[3]) > float(tp8[3])                          # PP does not shorten TPOT
    assert 0.7 < float(tp2pp4[4]) / float(tp8[4]) < 0.75             # "七成多"
    assert float(tp2pp4[5]) < float(tp8[5])                          # but prefill is cheaper per token
    assert 1.65 < float(tp8[5]) / float(tp2pp4[5]) < 1.75            # "TP=8 是 TP=2 的 1.7 倍左右"
    assert abs(float(rows["TP4"][3]) - float(tp8[3])) <= 0.2         # TP4 x PP2: "和 TP=8 几乎一样"


def test_moe_caveat_quotes_the_readme_validation(nb):
    # the EP section's caveat about the simulator's Mixtral preset cites the README's validation figures
    readme = (NOTEBOOK.parent.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| model = mixtral-8x7b |"))
    bias = row.split("|")[4].strip()                                              # e.g. "+8.9%"
    assert re.fullmatch(r"[+-]\d+\.\d%", bias) and f"Mixtral 各行的平均偏差是 {bias}" in _prose(nb)
    mixtral = [e for e in _capacity_errors("mixtral-8x7b") if e > 0.2]          # the rows the caveat means
    span = f"{min(mixtral):.0%}-{max(mixtral):.0%}".replace("%-", "-")            # e.g. "23-30%"
    assert f"Mixtral on NVIDIA GPUs is over-predicted by {span}" in readme
    assert f"NVIDIA GPU 上的行在 SLO 下的容量仍高估 {span.replace('-', '～')}" in _prose(nb)
    offline = re.search(r"\(offline too, \+(\d+)\.\.\+(\d+)%\)", readme)        # the MLPerf offline rows
    assert offline and f"离线吞吐也高估 {offline[1]}～{offline[2]}%" in _prose(nb)


def _capacity_errors(model):
    """The validation report's capacity-at-the-SLO errors (simulated / published - 1) of one model's rows."""
    import json
    import sys
    root = NOTEBOOK.parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    import fidelity
    report = json.loads((root / "tests" / "validation" / "report.json").read_text())
    return [report["predicted"][r.id] / r.value - 1 for r in fidelity.load_rows()
            if r.model == model and r.kind == "capacity at the SLO" and r.id in report["predicted"]]
