"""Chapter 10 (long context): the KV, prefill, fleet, context-parallel and eviction helpers of
course/ch10.py against hand computations and the simulator, the panel without a kernel, and the
executed notebook (in order, no errors, widget state saved, every figure the prose quotes printed
by a cell). Re-execute with `PYTHONPATH=$PWD python notebooks/run_notebooks.py 10`."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import nbformat
import numpy as np
import pytest

from course import ch10, plots
from sim import presets, workload
from sim.fleet import run_fleet
from sim.workload import Workload
from chapter_notebook import assert_ran_in_order, assert_saved_one_panel
from chapter_notebook import code_cells as _code, checked_cells, figures, han_chars, prose as _prose, stdout as _stdout

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "10-long-context.ipynb"


# --- KV bytes ---------------------------------------------------------------------------------------

def test_kv_bytes_per_token_by_hand():
    assert ch10.kv_bytes_per_token("llama-3-70b") == 2 * 80 * 8 * 128          # K and V, FP8: 1 byte
    assert ch10.kv_bytes_per_token("llama-3.1-405b") == 2 * 126 * 8 * 128
    assert ch10.kv_bytes_per_token("deepseek-v3") == 61 * (512 + 64)           # latent + RoPE key
    assert ch10.kv_bytes_per_token("llama-3-70b", "bf16") == 2 * 163840
    assert ch10.kv_bytes_per_gpu("llama-3-70b") == 163840 / 8                   # heads split over TP
    assert ch10.kv_bytes_per_gpu("deepseek-v3") == 35136                         # latent copied per GPU


def test_concurrency_by_hand():
    for m in ("llama-3-70b", "deepseek-v3"):
        s = ch10.node(m)
        copies = 1 if m == "llama-3-70b" else 8
        free = s.kv_capacity_tokens * s.kv_bytes_per_token
        assert ch10.concurrency(m, 131072) == int(free // (131072 * ch10.kv_bytes_per_token(m) * copies))
    assert ch10.concurrency("llama-3-70b", 32768) // 4 == ch10.concurrency("llama-3-70b", 131072)


def test_sliding_window_kv_by_hand():
    per = 163840
    assert ch10.request_kv_bytes("llama-3-70b", 131072) == per * 131072
    assert ch10.request_kv_bytes("llama-3-70b", 131072, window=4096, local_share=1.0) == per * 4096
    assert ch10.request_kv_bytes("llama-3-70b", 2000, window=4096, local_share=1.0) == per * 2000
    assert ch10.request_kv_bytes("llama-3-70b", 60000, window=1024, local_share=5 / 6) == pytest.approx(
        per * (60000 / 6 + 5 * 1024 / 6))
    with pytest.raises(ValueError, match="local_share"):
        ch10.request_kv_bytes("llama-3-70b", 10, window=4, local_share=2)
    with pytest.raises(ValueError, match="window"):
        ch10.request_kv_bytes("llama-3-70b", 10, window=0, local_share=1)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="context"):
            ch10.request_kv_bytes("llama-3-70b", bad)
        with pytest.raises(ValueError, match="context"):
            ch10.eviction_kv_bytes("llama-3-70b", bad, "full")


# --- prefill ----------------------------------------------------------------------------------------

def test_prefill_steps_cover_the_prompt_with_its_causal_pairs():
    s = ch10.setup()
    steps = ch10.prefill_steps(s, 20000)
    assert [t for t, _, _ in steps] == [8192, 8192, 3616]
    assert [c for _, c, _ in steps] == [0, 8192, 16384]
    assert sum(p for _, _, p in steps) == 20000 * 20001 // 2
    with pytest.raises(ValueError, match="length"):
        ch10.prefill_steps(s, 0)


@pytest.mark.parametrize("length", [1, 4000, 8192, 20000, 70001])
def test_prefill_time_is_the_simulators_ttft(length):
    s = ch10.setup()
    r = workload.run(s, Workload("one", (0.0,), (length,), (2,)))
    assert r.ttft[0] == ch10.prefill_s(s, length)
    linear_only = ch10.prefill_s(s, length, attention=False)
    assert linear_only < ch10.prefill_s(s, length) if length > 1000 else linear_only <= ch10.prefill_s(s, length)


def test_crossover_is_where_attention_equals_the_matmuls():
    for m in ("llama-3-70b", "deepseek-v3"):
        s = ch10.node(m)
        for n in (8192, 65536, 131072):
            linear, attn = ch10.prefill_terms(s, n)
            assert attn / linear == pytest.approx((n + 1) / ch10.crossover_tokens(s), rel=1e-12)
    assert ch10.crossover_tokens(ch10.node("deepseek-v3")) < ch10.crossover_tokens(ch10.node("llama-3-70b"))


def test_prefill_figure_plots_the_prefill_times():
    fig = ch10.prefill_figure(models=("llama-3-70b",), lengths=(4096, 65536))
    x, y = plots.line_data(fig, "llama-3-70b")
    assert list(x) == [4096, 65536] and list(y) == [ch10.prefill_s(ch10.node("llama-3-70b"), n) for n in x]
    _, lin = plots.line_data(fig, "llama-3-70b linear")
    assert (lin < y).all()


# --- fleets -----------------------------------------------------------------------------------------

def test_fleets_have_the_same_gpus_and_route_by_length():
    shared, split = ch10.fleet(4), ch10.fleet(4, 1)
    assert shared.gpus == split.gpus == 32 and split.pool_names == ("colocated", "long")
    with pytest.raises(ValueError, match="long_instances"):
        ch10.fleet(2, 2)
    w = ch10.mooncake_load()
    r = run_fleet(split, w)
    long = np.asarray(w.input_len) > ch10.LONG
    assert (r.instance[long] == 3).all() and (r.instance[~long] < 3).all()


def test_itl_gaps_are_every_decode_gap_of_the_class():
    w = ch10.mooncake_load()
    r = run_fleet(ch10.fleet(4), w)
    everyone = np.ones(len(w), bool)
    gaps, counts = ch10.itl_gaps(r, everyone)
    assert counts.sum() == (r.output_len[~np.isnan(r.finish)] - 1).sum()       # one gap per later token
    steps = r.steps
    keep = steps.decoders > 0
    assert sorted(zip(gaps, counts)) == sorted(zip(steps.duration[keep], steps.decoders[keep].astype(float)))
    long = np.asarray(w.input_len) > ch10.LONG
    assert ch10.itl_gaps(r, long)[1].sum() + ch10.itl_gaps(r, ~long)[1].sum() == counts.sum()


def test_runs_count_each_class_and_the_split_protects_short_prompts():
    w = ch10.mooncake_load()
    n_long = sum(n > ch10.LONG for n in w.input_len)
    shared, split = ch10.run_mooncake(4, 0), ch10.run_mooncake(4, 1)
    assert (split.short.requests, split.long.requests) == (len(w) - n_long, n_long)
    direct = run_fleet(ch10.fleet(4, 1), w)
    short = np.asarray(w.input_len) <= ch10.LONG
    assert split.short.ttft_p99_s == np.percentile(direct.ttft[short], 99)
    assert split.short.ttft_p99_s < shared.short.ttft_p99_s and split.long.ttft_p99_s > shared.long.ttft_p99_s



def _full_chunk_share(result, mask):
    """Share of the class's decode gaps that are steps at least half as long as one 8192-token
    prefill chunk (with no prefix): the steps the prose calls full-chunk steps."""
    gaps, counts = ch10.itl_gaps(result, mask)
    return counts[gaps > ch10.setup().step_time(8192, 0, 0, 0) / 2].sum() / counts.sum()


def test_more_gpus_do_not_beat_the_split_and_two_long_instances_starve_the_short():
    shared4, split, two_long, shared6 = (ch10.run_mooncake(n, k) for n, k in ((4, 0), (4, 1), (4, 2), (6, 0)))
    assert shared6.short.ttft_p99_s > split.short.ttft_p99_s
    assert shared6.short_ttft_met > split.short_ttft_met          # the bulk is faster, the tail is not
    assert split.short.ttft_p99_s < two_long.short.ttft_p99_s < shared4.short.ttft_p99_s
    assert two_long.short_ttft_met < shared4.short_ttft_met < split.short_ttft_met


def test_short_p99_itl_is_a_full_chunk_step_until_those_are_under_1pct():
    """The prose's threshold: P99 ITL sits at a long step while more than 1% of the gaps are
    full-chunk steps, and falls to an ordinary decode step (5 + 1 on 48 GPUs) once they are not."""
    w = ch10.mooncake_load()
    short = np.asarray(w.input_len) <= ch10.LONG
    half_chunk = ch10.setup().step_time(8192, 0, 0, 0) / 2
    for n, k in ((4, 0), (4, 1), (4, 2), (5, 1)):
        assert _full_chunk_share(run_fleet(ch10.fleet(n, k), w), short) > 0.01
        assert ch10.run_mooncake(n, k).short.itl_p99_s > half_chunk
    assert _full_chunk_share(run_fleet(ch10.fleet(6, 1), w), short) < 0.01
    assert ch10.run_mooncake(6, 1).short.itl_p99_s < ch10.setup().step_time(64, 64 * 8000, 0, 64)


def test_short_p99_itl_steps_down_through_partial_chunk_steps():
    """The prose's staircase, the split one step below the shared pool on the same GPUs: on shared 5
    (40 GPUs) near-full chunk steps are still over 1% of the short prompts' gaps and P99 ITL is a
    full chunk step; on 4 + 1 (40 GPUs) and shared 6 (48 GPUs) near-full chunk steps are under 1% but
    all prefill-carrying steps are over 1%, so P99 is a partly filled mixed step, shorter than a full
    chunk and longer than a decode step; on 5 + 1 (48 GPUs) even the prefill-carrying steps are
    under 1% and P99 is an ordinary decode step."""
    w = ch10.mooncake_load()
    short = np.asarray(w.input_len) <= ch10.LONG
    full, plain = ch10.setup().step_time(8192, 0, 0, 0), ch10.setup().step_time(64, 64 * 8000, 0, 64)

    def share_over(n, k, seconds):
        gaps, counts = ch10.itl_gaps(run_fleet(ch10.fleet(n, k), w), short)
        return counts[gaps > seconds].sum() / counts.sum()

    assert share_over(5, 0, 0.9 * full) > 0.01
    assert ch10.run_mooncake(5, 0).short.itl_p99_s > 0.9 * full
    for n, k in ((5, 1), (6, 0)):
        assert share_over(n, k, 0.9 * full) < 0.01 < share_over(n, k, plain)
        assert plain < ch10.run_mooncake(n, k).short.itl_p99_s < 0.9 * full
    assert share_over(6, 1, plain) < 0.01
    assert ch10.run_mooncake(6, 1).short.itl_p99_s < plain


def test_the_split_lowers_short_itl_only_once_long_prompts_are_common():
    """At 5% and 10% long prompts the shared pool's P99 ITL is a full chunk step and the split cuts
    it by more than 3x; at 2% neither has 1% of full chunk steps, both P99s are mixed steps of the
    short prompts' own prefills, and the split's is the higher: its three main instances carry every
    short prompt, so more of the gaps are prefill-carrying steps."""
    half_chunk, plain = ch10.setup().step_time(8192, 0, 0, 0) / 2, ch10.setup().step_time(64, 64 * 8000, 0, 64)

    def share_over_plain(result, mask):
        gaps, counts = ch10.itl_gaps(result, mask)
        return counts[gaps > plain].sum() / counts.sum()

    for share in ch10.SHARES:
        w = ch10.mix(share, 96_000)
        short = np.asarray(w.input_len) <= ch10.LONG
        shared, split = ch10.run_mix(4, 0, share, 96_000), ch10.run_mix(4, 1, share, 96_000)
        assert _full_chunk_share(run_fleet(ch10.fleet(4, 1), w), short) < 0.01
        if share == 0.02:
            assert _full_chunk_share(run_fleet(ch10.fleet(4), w), short) < 0.01
            assert plain < shared.short.itl_p99_s < split.short.itl_p99_s < half_chunk
            assert share_over_plain(run_fleet(ch10.fleet(4, 1), w), short) > share_over_plain(
                run_fleet(ch10.fleet(4), w), short)
        else:
            assert _full_chunk_share(run_fleet(ch10.fleet(4), w), short) > 0.01
            assert split.short.itl_p99_s < shared.short.itl_p99_s / 3

def test_ttft_figure_plots_the_short_prompts_ttft():
    fig = ch10.ttft_figure(layouts=((4, 1),))
    x, y = plots.line_data(fig, "3 + 1 long (32 GPUs)")
    w = ch10.mooncake_load()
    short = np.asarray(w.input_len) <= ch10.LONG
    assert list(x) == sorted(run_fleet(ch10.fleet(4, 1), w).ttft[short]) and y[-1] == 1


def test_mix_is_a_long_tail_as_asked():
    w = ch10.mix(0.1, 64_000)
    inp = np.asarray(w.input_len)
    long = inp > ch10.LONG
    assert long.sum() == 72 and len(w) == 720
    assert inp[long].min() >= 48_000 and inp[long].max() <= 80_000 and inp[~long].max() <= ch10.LONG
    assert w.arrival[0] == 0 and np.all(np.diff(w.arrival) >= 0)
    with pytest.raises(ValueError, match="long_share"):
        ch10.mix(1.5, 64_000)
    with pytest.raises(ValueError, match="long_len"):
        ch10.mix(0.1, 40_000)


# --- context parallelism and eviction ------------------------------------------------------------------

def test_lse_merge_is_exact():
    assert ch10.lse_merge_error(blocks=7, keys=300) < 1e-12
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 8)), rng.standard_normal((5, 8)), rng.standard_normal((5, 4))
    out, lse = ch10.partial_attention(q, k, v)
    s = q @ k.T / np.sqrt(8)
    assert np.allclose(lse, np.log(np.exp(s).sum(axis=1)))
    assert np.allclose(ch10.lse_merge([out], [lse]), out)


def test_cp_prefill_by_hand():
    one = ch10.cp_prefill("llama-3.1-405b", 131072, 1)
    linear, attn = ch10.prefill_terms(ch10.node("llama-3.1-405b", "h100-sxm"), 131072)
    assert one.total_s == pytest.approx(linear + attn) and one.exposed_s == 0
    sixteen = ch10.cp_prefill("llama-3.1-405b", 131072, 16)
    assert sixteen.total_s == pytest.approx(one.total_s / 16)
    slow = ch10.cp_prefill("llama-3.1-405b", 131072, 16, link_gbs=12.5)
    kv = ch10.node("llama-3.1-405b", "h100-sxm").kv_bytes_per_token
    assert slow.hop_s == pytest.approx(131072 / 16 * kv / 12.5e9)
    assert slow.exposed_s == pytest.approx(15 * (slow.hop_s - attn / 256))
    with pytest.raises(ValueError, match="cp"):
        ch10.cp_prefill("llama-3-70b", 1000, 0)


def test_eviction_by_hand():
    per = 163840
    assert ch10.eviction_kv_bytes("llama-3-70b", 131072, "streaming") == per * 4096
    assert ch10.eviction_kv_bytes("llama-3-70b", 1000, "streaming") == per * 1000
    assert ch10.eviction_kv_bytes("llama-3-70b", 131072, "h2o") == per * np.ceil(0.2 * 131072)
    assert ch10.eviction_concurrency("llama-3-70b", 131072, "full") == ch10.concurrency("llama-3-70b", 131072)
    with pytest.raises(ValueError, match="policy"):
        ch10.eviction_kv_bytes("llama-3-70b", 10, "lru")


# --- the panel --------------------------------------------------------------------------------------

def test_panel_answers_and_moves():
    p = ch10.long_panel()
    assert p.answer == ch10.panel_answer(0.05, 64_000, 4, 1)
    assert p.answer.run.gpus == p.answer.shared.gpus == 32 and "3 + 1 long" in p.table.value
    p.controls["long_instances"].value = 0
    assert p.answer.run == p.answer.shared and "shared 4" in p.table.value and "3 + 1" not in p.table.value
    p.controls["instances"].value = 6
    assert p.answer.run.gpus == 48


# --- the executed notebook --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_notebook_ran_in_order_without_errors(nb):
    assert_ran_in_order(nb)


def test_notebook_saved_the_panel_and_a_figure(nb):
    assert_saved_one_panel(nb, "long_panel()")
    assert figures(nb) >= 1
    assert han_chars(nb) > 1800
    assert len(checked_cells(nb)) >= 6


def test_links_the_problems_and_has_a_judge_cell(nb):
    from practice import catalog
    ids = [p.id for p in catalog.all_problems() if str(p.meta.get("chapter")).zfill(2) == "10"]
    for pid in sorted(set(ids) | {140, 153, 158, 159, 169}):
        assert f"judge.py start {pid}" in _prose(nb)
    judge = [c for c in _code(nb) if c.source.startswith("%%judge")]
    assert len(judge) == 1 and judge[0].source.splitlines()[0] == "%%judge 153 --examples"


QUOTED = [
    ("252.0 KiB", "252.0 KiB"), ("160.0 KiB", "160.0 KiB"), ("405B 要 8.5 GB", "8.5 GB"), ("70B 要 5.4 GB", "5.4 GB"),
    ("34.3 KiB", "34.3 KiB"), ("20.0 KiB", "20.0 KiB"),
    ("42 个 32K 的请求、10 个 128K", "1.2 GB           42                10"),
    ("从 184 个降到 46 个", "5.4 GB           184               46"),
    ("0.67 GB", "0.67 GB    0.67 GB     1474"), ("3.72 GB 对 21.47 GB", "3.72 GB     956      266"),
    ("从 46 个升到 266 个", "266"),
    ("59,674", "59,674"), ("101,239", "101,239"), ("69%", "69%"), ("8.16 s", "8.16 s"), ("17,330", "17,330"),
    ("占 88%", "88%"),
    ("12,031", "12,031"), ("6,909", "6,909"), ("85,400", "85,400"), ("126,195", "126,195"),
    ("6.9%", "6.9% of the requests"), ("32.9%", "32.9% of the prompt tokens"),
    ("978 个请求，其中 69 个", "978 requests, 69 above"),
    ("6.13 s，只有 87.7%", "shared 4    32    6.13 s          305 ms         87.7%"),
    ("2.94 s，92.7%", "3 + 1 long  32    2.94 s          284 ms         92.7%"),
    ("还有 3.82 s", "shared 6    48    3.82 s"), ("3 + 1（2.94 s）还差", "3 + 1 long  32    2.94 s"),
    ("2 s 以内的比例倒是 95.5%，高过 3 + 1 的 92.7%", "shared 6    48    3.82 s          71 ms          95.5%"),
    ("2 s 以内的比例倒是 95.5%，高过 3 + 1 的 92.7%", "3 + 1 long  32    2.94 s          284 ms         92.7%"),
    ("从 8.53 s 变成 16.34 s", "87.7%           8.53 s"),
    ("16.34 s", "92.7%           16.34 s"),
    ("回升到 3.77 s，2 s 以内的只剩 79.9%", "2 + 2 long  32    3.77 s          312 ms         79.9%"),
    ("从 311 ms 变成 518 ms", "8.53 s         311 ms"), ("518 ms", "16.34 s        518 ms"),
    ("284～312 ms", "32    2.94 s          284 ms"), ("284～312 ms", "32    3.77 s          312 ms"),
    ("40 张卡的共享池还是 283 ms", "shared 5    40    5.39 s          283 ms"),
    ("4 + 1 降到 169 ms", "4 + 1 long  40    2.53 s          169 ms"),
    ("共享池降到 71 ms", "shared 6    48    3.82 s          71 ms"),
    ("283 ms，分出一个长池后降到 63 ms", "5%          shared 4    32    7.01 s          283 ms"),
    ("283 ms，分出一个长池后降到 63 ms", "5%          3 + 1 long  32    1.07 s          63 ms"),
    ("占 10% 时是 505 ms 对 56 ms", "10%         3 + 1 long  32    1.06 s          56 ms"),
    ("占 10% 时是 505 ms 对 56 ms", "10%         shared 4    32    10.35 s         505 ms"),
    ("（64 ms 对 74 ms", "2%          shared 4    32    3.53 s          64 ms"),
    ("（64 ms 对 74 ms", "2%          3 + 1 long  32    1.00 s          74 ms"),
    ("32.21 s", "32.21 s"), ("2 个是 12.33 s，比共享池的 13.61 s", "91.7%           13.61 s"),
    ("12.33 s", "5%          2 + 2 long  32    1.15 s          140 ms         100.0%          12.33 s"),
    ("201.90 s", "201.90 s"), ("26.83 s", "26.83 s"),
    ("差不到 1e-15", "max |difference| < 1e-15"), ("944.2 s", "944.2 s"), ("59.0 s", "59.0 s"), ("23.99 s 降到 1.50 s", "23.99 s"),
    ("1.50 s", "1.50 s"), ("5.3 ms", "5.3 ms"), ("52.5 ms", "52.5 ms"), ("169.1 ms", "hop 169.1 ms"),
    ("1.75 s", "exposed 1.75 s"), ("3.25 s", "total 3.25 s"),
    ("46 个变成 230 个", "H2O: 20% budget                      4.30 GB                 230"),
    ("1474 个", "1474"), ("10 个变成 52 个或 337 个", "0.14 GB                 337"),
    ("中位数就有 6,909 token，P90 是 27,367", "p90 27,367"),
    ("5 + 1 则降到 11 ms", "5 + 1 long  48    2.02 s          11 ms"),
    ("步长模型算是 30.73 s，比只算 FLOPs 的 23.99 s", "calibrated step model 30.73 s, FLOPs only 23.99 s"),
    ("FP8 峰值的 33%", "33% of the FP8 peak"),
    ("12.96 s，只有 42.0%", "(least_kv): short p99 TTFT 12.96 s, 42.0% within 2 s"),
]


@pytest.mark.parametrize("prose, printed", QUOTED)
def test_prose_quotes_what_the_cells_print(nb, prose, printed):
    assert prose in _prose(nb), f"the prose no longer says {prose!r}"
    assert printed in _stdout(nb), f"no cell prints {printed!r} (quoted as {prose!r}); rerun and fix the prose"
