"""Chapter 05 (quantized deployment): the helpers in course/ch05.py by hand and against sim, the
panel without a kernel, and the executed notebook (in order, no errors, widget state saved, every
figure the prose quotes printed by a cell). Re-execute with
`PYTHONPATH=$PWD python notebooks/run_notebooks.py 05`."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import pytest

from course import ch05
from practice import catalog
from sim import plan, presets
from sim.presets.models import MODELS
from sim.setup import attention_pairs
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel, has_svg_chart
from chapter_notebook import code_cells as _code, checked_cells, figures, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "05-quantized-deployment.ipynb"


# --- memory and steps --------------------------------------------------------------------------

def test_memory_row_by_hand():
    m = MODELS["llama-3-70b"]
    r = ch05.memory_row("llama-3-70b", "h100-sxm", 4, "int4", "fp8")
    s = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="int4", kv_dtype="fp8")
    assert r.weights_gb_per_gpu == m.total_params * 0.5 / 4 / 1e9
    assert r.kv_kib_per_token == 2 * 80 * 8 * 128 / 1024 and r.kv_tokens == s.kv_capacity_tokens
    assert r.sequences == s.kv_capacity_tokens // 2500
    lone = ch05.memory_row("llama-3-70b", "h100-sxm", 1, "bf16", "bf16")
    assert lone.kv_tokens is None and "does not fit" in lone.reason


def test_step_helpers_are_the_setups_step_time():
    s = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8")
    assert ch05.decode_step_s(s, 16) == s.step_time(16, 16 * 2000, 0, 16)
    assert ch05.prefill_step_s(s, 4096) == s.step_time(4096, 0, attention_pairs(0, 4096))
    bf16 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="bf16")
    int4 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="int4", kv_dtype="bf16")
    # memory-bound GEMMs: exactly the bytes' ratio; compute-bound: the same tensor cores
    assert ch05.gemm_s(bf16, 1) / ch05.gemm_s(int4, 1) == pytest.approx(4.0)
    assert ch05.gemm_s(bf16, 8192) == ch05.gemm_s(int4, 8192)


def test_crossover_is_where_int4_stops_winning():
    b = ch05.crossover_batch("llama-3-70b", "h100-sxm", 4)
    int4 = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="int4", kv_dtype="fp8")
    fp8 = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8", kv_dtype="fp8")
    assert ch05.decode_step_s(int4, b - 1) < ch05.decode_step_s(fp8, b - 1)
    assert ch05.decode_step_s(int4, b) >= ch05.decode_step_s(fp8, b)
    assert 1 < b < ch05.crossover_batch("llama-3-70b", "h100-sxm", 8)


# --- plans ---------------------------------------------------------------------------------------

def test_cost_row_is_sim_plan():
    r = ch05.cost_row("llama-3-70b", "h100-sxm", 4, "fp8", "fp8")
    s = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8", kv_dtype="fp8")
    p = plan(200, s, 2000, 500, ttft_slo=2.0, tpot_slo=0.05, gpus_per_instance=4, gpu_hour_usd=2.5)
    assert (r.rate, r.instances, r.gpus, r.usd_per_million, r.bound) == (
        p.rate_per_instance, p.instances, p.gpus, p.usd_per_million_output_tokens, p.bound)
    missing = ch05.cost_row("llama-3-70b", "h100-sxm", 4, "fp4", "fp4")
    assert not missing.feasible and "FP4" in missing.reason


def test_cheapest_picks_the_lowest_cost_tp():
    rows = [ch05.cost_row("llama-3-8b", "h100-sxm", tp, "fp8", "fp8") for tp in (1, 2)]
    best = ch05.cheapest("llama-3-8b", "h100-sxm", "fp8", "fp8", tps=(1, 2))
    assert best.usd_per_million == min(r.usd_per_million for r in rows if r.feasible)


def test_cost_cells_of_an_infeasible_row_keep_its_reason():
    row = ch05.cost_row("llama-3-70b", "a100-80gb", 8, "fp8", "fp8")
    cells = ch05.cost_cells(row)
    assert cells[2:6] == ["-"] * 4 and "FP8" in cells[6]


# --- the panel -----------------------------------------------------------------------------------

def test_panel_answers_from_plan_and_moves_with_its_controls():
    p = ch05.quant_panel()
    a = p.answer
    assert a.row == ch05.cheapest("llama-3-70b", "h100-sxm", "fp8", "fp8")
    assert f"{a.row.gpus} 张卡" in p.table.value and "</svg>" in p.chart.value
    assert set(p.figure.labels()) == {"fp8/fp8", "bf16/bf16"}
    p.controls["tp"].value = 8
    assert p.answer.row == ch05.cost_row("llama-3-70b", "h100-sxm", 8, "fp8", "fp8")
    p.controls["weight_dtype"].value = "fp4"
    assert "不可行" in p.table.value and "FP4" in p.table.value
    p.controls["gpu"].value = "b200"
    assert p.answer.row.feasible and "NVFP4" in p.table.value


# --- the executed notebook -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel(nb):
    assert has_svg_chart(assert_saved_one_panel(nb, "quant_panel()"))


def test_checked_cells_figure_and_chinese_prose(nb):
    checked = checked_cells(nb)
    assert len(checked) >= 6
    assert figures(nb) >= 1
    han = han_chars(nb)
    assert han > 2000
    for heading in ("显存", "一步的时间", "已发表的测量", "容量与成本", "精度", "思考题", "练习"):
        assert heading in _prose(nb)


def test_links_every_chapter_05_problem_and_has_a_judge_cell(nb):
    ids = [p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "05"]
    assert 167 in ids
    for pid in ids:
        assert f"judge.py start {pid}" in _prose(nb)
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and "--examples" in judge[0].source.splitlines()[0]
    assert any("%load_ext practice" in c.source for c in _code(nb))


# Figures the prose quotes, each as the prose writes it and as a cell prints it.
QUOTED = [
    ("70.6 GB", "70.6 GB"), ("18,295", "18,295"), ("467,217", "467,217"), ("186 个请求", " 186\n"),
    ("1,365,060", "1,365,060"), ("160 KiB", "160 KiB"), ("3,376,059", "3,376,059"), ("3,160,747", "3,160,747"),
    ("273 对 186", " 273\n"), ("368 ms", "368 ms"), ("302 ms", "302 ms"), ("319 ms", "319 ms"),
    ("362 ms", "362 ms"), ("9.5 ms 对 14.2 ms", "9.5 "), ("14.2 对 14.3 ms", "14.3 "), ("7.9～10.9 ms", "10.9 ms"),
    ("7.9～10.9 ms", "7.9 ms"), ("53 us", "fp8 53 us"), ("BF16 是 15 us", "bf16 15 us"),
    ("36.6 ms", "36.6"), ("37.5 ms", "37.5"),
    ("batch 393", "batch of 393"), ("TP=2 时是 175", "batch of 175"), ("提前到 347", "batch of 347"),
    ("4.00x", "4.00x"), ("2.16x 和 1.30x", "2.16x"), ("2.16x 和 1.30x", "1.30x"), ("1.50x", "1.50x"),
    ("1.80x", "1.80x"),
    ("$1.49", "$1.49"), ("$2.47", "$2.47"), ("$1.51", "$1.51"), ("H100 $1.64", "$1.64"), ("H200 $2.16", "$2.16"),
    ("$1.49 对 FP8 的 $1.17", "$1.17"), ("$0.61", "$0.61"), ("一共 44 张卡", " 44 "), ("362 对 302 ms", "362 ms"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"
