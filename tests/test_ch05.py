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
    # the step model's combination of FLOPs and weight read: the calibrated presets' p-norm, by hand
    assert bf16.roofline_p == 4
    compute = 2 * bf16.params * 64 / (bf16.peak_flops * bf16.mfu)
    assert ch05.gemm_s(bf16, 64) == pytest.approx((compute ** 4 + (bf16.weight_bytes / bf16.bandwidth) ** 4) ** 0.25)
    assert ch05.gemm_s(int4, 64) == pytest.approx((compute ** 4 + (int4.weight_bytes / int4.bandwidth) ** 4) ** 0.25)
    handbook = bf16.replace(roofline_p=0.0)
    assert ch05.gemm_s(handbook, 64) == max(compute, handbook.weight_bytes / handbook.bandwidth)
    # memory-bound GEMMs: the bytes' ratio; compute-bound: the same tensor cores, INT4's smaller read
    # still adding a little under the p-norm; at the ridge the rounded corner takes INT4's gain below 4x
    assert ch05.gemm_s(bf16, 1) / ch05.gemm_s(int4, 1) == pytest.approx(4.0)
    assert ch05.gemm_s(bf16, 8192) > ch05.gemm_s(int4, 8192) == pytest.approx(2 * int4.params * 8192 / (
        int4.peak_flops * int4.mfu), rel=1e-6)
    assert 3 < ch05.gemm_s(bf16, 64) / ch05.gemm_s(int4, 64) < 3.9


def test_crossover_is_where_int4_stops_winning():
    b = ch05.crossover_batch("llama-3-70b", "h100-sxm", 4)
    int4 = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="int4", kv_dtype="fp8")
    fp8 = presets.instance("llama-3-70b", "h100-sxm", tp=4, weight_dtype="fp8", kv_dtype="fp8")
    assert ch05.decode_step_s(int4, b - 1) < ch05.decode_step_s(fp8, b - 1)
    assert ch05.decode_step_s(int4, b) >= ch05.decode_step_s(fp8, b)
    assert 1 < b < ch05.crossover_batch("llama-3-70b", "h100-sxm", 8)


def test_int4_moves_more_elementwise_bytes_and_crosses_earlier_for_it():
    """Section 2: the memory-bound kernels between GEMMs cost weight-only INT4 more per token than FP8
    (no activation quantisation: the normalised input is written in BF16), which pulls the crossover in."""
    int4 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="int4", kv_dtype="fp8")
    fp8 = presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")
    assert int4.comm_s_per_token > fp8.comm_s_per_token > 0
    level = int4.replace(comm_s_per_token=fp8.comm_s_per_token)
    b = ch05.crossover_batch("llama-3-70b", "h100-sxm", 8)
    assert ch05.decode_step_s(level, b) < ch05.decode_step_s(fp8, b)       # without the extra bytes INT4 still wins here


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
    ("273 对 186", " 273\n"), ("354 ms", "354 ms"), ("283 ms", "283 ms"), ("INT8 是 300 ms", "300 ms"),
    ("349 ms", "349 ms"), ("5.3 ms 对 10.0 ms", "5.3 "), ("5.3 ms 对 10.0 ms", "10.0 "),
    ("10.0 对 10.1 ms", "10.1 "), ("3.7～6.7 ms", "3.7 ms"), ("3.7～6.7 ms", "6.7 ms"),
    ("52 us", "fp8 52 us"), ("BF16 是 15 us", "bf16 15 us"), ("43.1 ms", "43.1"), ("44.3 ms", "44.3"),
    ("batch 375", "batch of 375"), ("TP=2 时是 186", "batch of 186"), ("提前到 343", "batch of 343"),
    ("186～375", "batch of 186"), ("186～375", "batch of 375"),
    ("4.00x", "4.00x"), ("batch 32 是 3.95x", "3.95x"), ("batch 64 是 3.47x", "3.47x"), ("（3.75x）", "3.75x"),
    ("2.12x 和 1.56x", "2.12x"), ("2.12x 和 1.56x", "1.56x"), ("1.23x 和 1.18x", "1.23x"), ("1.23x 和 1.18x", "1.18x"),
    ("1.88x（70B", "1.88x"), ("2.40x（8B", "2.40x"),
    ("$1.44", "$1.44"), ("$2.42", "$2.42"), ("只贵一点（$1.49）", "$1.49"), ("H100 $1.58 对 FP8 的 $1.44", "$1.58"),
    ("H200 $2.06 对 $1.61", "$2.06"), ("H200 $2.06 对 $1.61", "$1.61"),
    ("$1.39 对 FP8 的 $1.12", "$1.39"), ("$1.39 对 FP8 的 $1.12", "$1.12"), ("$0.61", "$0.61"), ("一共 44 张卡", " 44 "),
    ("从 3.2 涨到 6.0 req/s", " 3.2 "), ("从 3.2 涨到 6.0 req/s", " 6.0 "), ("349 对 283 ms", "349 ms"),
    ("349 对 283 ms", "283 ms"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"


def _rows(nb, pattern):
    import re
    return re.findall(pattern, _stdout(nb), re.M)


def test_the_prose_reads_the_cost_table_right(nb):
    """Section 4: FP8 is the cheapest 8-bit format on Hopper and decode-bandwidth bound on every GPU;
    INT4 loses to it everywhere, prefill-compute bound; B200's FP4 nearly halves FP8's cost."""
    got = {(g, f): (float(rate), int(gpus), float(usd), bound) for g, f, rate, gpus, usd, bound in _rows(
        nb, r"^(h100-sxm|h200|b200)\s+(\w+/\w+)\s+TP\d\s+([\d.]+)\s+(\d+)\s+\$([\d.]+)\s+(\w+)$")}
    assert len(got) == 13
    for gpu in ("h100-sxm", "h200", "b200"):
        fp8, int4 = got[gpu, "fp8/fp8"], got[gpu, "int4/fp8"]
        assert fp8[3] == "decode_bandwidth" and int4[3] == "prefill_compute" and int4[2] > fp8[2]
        assert fp8[2] == min(usd for (g, f), (_, _, usd, _) in got.items() if g == gpu and f != "fp4/fp4")
    assert got["h100-sxm", "fp8/fp8"][2] < 0.6 * got["h100-sxm", "bf16/bf16"][2]       # four tenths cheaper
    assert got["h100-sxm", "fp8/fp8"][2] < got["h100-sxm", "int8/int8"][2] < 1.05 * got["h100-sxm", "fp8/fp8"][2]
    fp4, fp8 = got["b200", "fp4/fp4"], got["b200", "fp8/fp8"]
    assert fp4[3] == "prefill_compute" and 0.5 < fp4[2] / fp8[2] < 0.6 and fp4[0] > 1.8 * fp8[0]


def test_the_prose_reads_the_crossovers_right(nb):
    """Section 2: the crossover comes latest at TP=8, every one lies past the roofline's ~148, and
    H200's higher bandwidth brings it earlier than H100's at the same TP."""
    cross = {(g, int(tp)): int(b) for g, tp, b in _rows(
        nb, r"^(h100-sxm|h200) TP(\d): INT4 stops beating FP8 at a decode batch of (\d+)$")}
    assert len(cross) == 4
    assert cross["h100-sxm", 8] > cross["h100-sxm", 4] > cross["h100-sxm", 2] > 148
    assert cross["h200", 8] < cross["h100-sxm", 8]


def test_the_prose_reads_the_step_and_gemm_tables_right(nb):
    """Section 2: INT4 fastest at batch 1, FP8 at batch 512, FP8 barely ahead of BF16 at batch 1.
    Section 3: the GEMMs' INT4 gain falls gradually (the rounded corner), the whole step's below 2.8x."""
    step = {f: [float(x) for x in xs] for f, *xs in _rows(
        nb, r"^(\w+/\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\d+ ms\s+[\d.]+ ms$")}
    assert sorted(step) == ["bf16/bf16", "fp8/fp8", "int4/fp8", "int8/int8"]
    assert min(step, key=lambda f: step[f][0]) == "int4/fp8" and min(step, key=lambda f: step[f][3]) == "fp8/fp8"
    assert 0 < step["bf16/bf16"][0] - step["fp8/fp8"][0] < 0.05 * step["bf16/bf16"][0]
    prefill = dict(_rows(nb, r"^(\w+/\w+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+) ms\s+[\d.]+ ms$"))
    prefill = {f: int(ms) for f, ms in prefill.items()}
    assert round(prefill["bf16/bf16"] / prefill["fp8/fp8"], 2) == 1.25                  # "约 1.25 倍"
    assert prefill["fp8/fp8"] < prefill["int8/int8"] < prefill["int4/fp8"] < prefill["bf16/bf16"]
    assert prefill["int4/fp8"] > 0.95 * prefill["bf16/bf16"]                             # INT4 close to BF16
    for instance in ("llama-3-70b, 8 x h100-sxm", "llama-3-8b, 1 x a100-80gb"):
        rows = [(int(b), float(g), float(w)) for b, g, w in _rows(
            nb, rf"^{instance}\s+(\d+)\s+([\d.]+)x\s+([\d.]+)x$")]
        gains = [g for _, g, _ in rows]
        assert len(rows) == 6 and gains == sorted(gains, reverse=True) and gains[0] == 4.0
        assert 1.5 < rows[4][1] < 4.0 and 1.0 < rows[5][1]          # batch 128 still well above 1, 256 nearly 1
        assert 1.5 < rows[0][2] < 2.8                                 # the whole step at batch 1: below Marlin's 2.8x
    assert _rows(nb, r"^llama-3-8b, 1 x a100-80gb\s+16\s+([\d.]+)x")[0] != "4.00"   # declines from batch 16
