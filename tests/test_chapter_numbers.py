"""Every key figure the prose of chapters 01 and 02 quotes is the figure a cell printed.

Reads the committed, executed notebooks: for each figure, the unique code cell whose source holds a
marker, a regex over its stdout, and the way the prose writes that number. Re-execute the notebooks
(`python notebooks/run_notebooks.py`) and a figure that moved fails here until the text follows it.
"""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CH01, CH02 = "01-load-testing.ipynb", "02-system-design.ipynb"


def _load(name):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def stdout_of(name, marker):
    cells = [c for c in _load(name).cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, f"{name}: {len(cells)} code cells hold {marker!r}"
    return "".join(o.get("text", "") for o in cells[0].outputs if o.output_type == "stream")


def prose(name):
    return "\n".join(c.source for c in _load(name).cells if c.cell_type == "markdown")


def grab(name, marker, pattern, group=1):
    m = re.search(pattern, stdout_of(name, marker), re.M)
    assert m, f"{name}: {pattern!r} not in the output of the cell holding {marker!r}"
    return m.group(group)


# (notebook, cell marker, regex over its output, how the prose writes the captured number)
FIGURES = [
    # 01: step times and the decode crossover
    (CH01, "1 decoder, 2000-token context", r"1 decoder, 2000-token context\s+([\d.]+) ms", "约 {} ms"),
    (CH01, "1 decoder, 2000-token context", r"512 decoders, ~2250 context each\s+([\d.]+) ms", "{} ms 就是算力项"),
    (CH01, "1 decoder, 2000-token context", r"one 2000-token prompt\s+([\d.]+) ms", lambda v: f"要 {round(float(v))} ms"),
    (CH01, "1 decoder, 2000-token context", r"a full 8192-token prefill chunk\s+([\d.]+) ms",
     lambda v: f"满 8192 token 的块要 {round(float(v))} ms"),
    (CH01, "decode_crossover", r"context\s+0 tokens: compute bound from (\d+) decoders", "交点在 {} 个请求"),
    (CH01, "decode_crossover", r"context 2250 tokens: compute bound from (\d+) decoders", "**{}** 个请求"),
    # 01: metrics at 16 req/s, the ceiling, the bisection, seeds, Little's law
    (CH01, "result = simulate(setup, 16", r"ITL\s+p50\s+[\d.]+ ms\s+p99\s+([\d.]+) ms",
     lambda v: f"超过 {int(float(v)) // 10 * 10} 毫秒"),
    (CH01, "result = simulate(setup, 16", r"goodput ([\d.]+) req/s", "goodput（{} req/s）"),
    (CH01, "result = simulate(setup, 16", r"throughput ([\d.]+) req/s", "吞吐（{} req/s）"),
    (CH01, "result = simulate(setup, 16", r"^run ([\d.]+) s", "整次压测的 {} s"),
    (CH01, "result = simulate(setup, 16", r"arrival window ([\d.]+) s", "到达窗口 {} s"),
    (CH01, "compute ceiling", r"= ([\d.]+) req/s", "约 {} 个请求"),
    # 01: the handbook's bisection against the steady-state search, window by window
    (CH01, "handbook = max_rate", r'method="bisect": ([\d.]+)', "答案 {} req/s 就是手册的数"),
    (CH01, "handbook = max_rate", r'method="search": ([\d.]+)', "稳态搜索给出的 {} req/s"),
    (CH01, "steady.format_steady_check", r"^([\d.]+) req/s: steady trial", "{} req/s 上，稳态压测里"),
    (CH01, "steady.format_steady_check", r"handbook's trial, ([\d.]+) windows", "只覆盖 {} 个窗口"),
    (CH01, "steady.format_steady_check", r"windows\):\s+([\d.]+)% within SLO -> pass\n\s+judged part.*-> fail",
     "{}% 达标，照手册的判据算通过"),
    (CH01, "steady.format_steady_check", r"judged part .*?:\s+([\d.]+)% within SLO -> fail", "只有 {}% 达标"),
    (CH01, "steady.format_steady_check", r"-> fail; (\d+) of \d+ windows", "有 {} 个低于 99%"),
    (CH01, "steady.format_steady_check", r"-> fail; \d+ of (\d+) windows", "{} 个窗口里"),
    (CH01, "steady.format_steady_check", r"judged part .*?:\s+([\d.]+)% within SLO -> pass", "判定部分 {}% 达标"),
    (CH01, "for rate, t50, t99", r"^\s*17 req/s .*TPOT p50\s+[\d.]+ p99\s+([\d.]+) ms",
     lambda v: "17 req/s 时 P99 TPOT 已超过 50 ms" if float(v) > 50 else f"17 req/s: {v}"),
    (CH01, "for seed in range(5)", r"seed 0: ([\d.]+)", lambda v: f"在 {float(v):.1f} 到"),
    (CH01, "for seed in range(5)", r"seed 1: ([\d.]+)", lambda v: f"到 {float(v):.1f} req/s 之间"),
    (CH01, "little = explain.littles_law", r"measured L .*: ([\d.]+)", lambda v: f"约 {round(float(v))} 个请求"),
    (CH01, "little = explain.littles_law", r"W = ([\d.]+) s", lambda v: f"约 {float(v):.1f} s"),
    # 02: the chapter's three lines and the hand estimates
    (CH02, "Setup(params=70.6e9", r"最大速率约 ([\d.]+) req/s", "单实例约 {} req/s"),
    (CH02, "Setup(params=70.6e9", r"需要 (\d+) 个实例", "200 QPS 要 {} 个实例"),
    (CH02, "Setup(params=70.6e9", r"余量为 (\d+) 个（(\d+) 张 H100）", lambda v: f"{v} 个实例"),
    (CH02, "Setup(params=70.6e9", r"（(\d+) 张 H100）", "{} 张 H100"),
    (CH02, "Setup(params=70.6e9", r"：每小时 \$(\d+)", "每小时约 ${}"),
    (CH02, "Setup(params=70.6e9", r"token \$([\d.]+)", "约 ${}"),
    # 02: the same question with sim.plan's steady-state search
    (CH02, 'for search in ("chapter", "auto")', r"search='chapter'\s+([\d.]+) req/s", lambda v: f"{float(v):.1f} req/s"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'\s+([\d.]+) req/s", "单实例 {} req/s"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'.*?: (\d+) instances", "要 {} 个实例"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'.*?(\d+) with 30% headroom", "加余量 {} 个"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'.*?\((\d+) H100\)", "{} 张 H100，"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'.*?\$(\d+)/h", "每小时 ${}"),
    (CH02, 'for search in ("chapter", "auto")', r"search='auto'.*?\$([\d.]+) per million", "每百万输出 token ${}"),
    (CH02, "TPOT floor", r"\+ 1.5 ms overhead = ([\d.]+) ms", "约 {} ms"),
    (CH02, "TPOT floor", r"= ([\d.]+) req/s", "即 {} req/s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"32768 tokens in: prefill ([\d.]+) s", "0.74 s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"32768 tokens in: prefill [\d.]+ s,\s+([\d.]+) req/s", "约 {} req/s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"2000 tokens in: .* (\d+)% of the compute ceiling", "这个上限的 {}%"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"2000 tokens in: prefill [\d.]+ s,\s+([\d.]+) req/s", "稳态搜索的 {} req/s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"32768 tokens in: .* (\d+)% of the compute ceiling", "四分之一（{}%）"),
    (CH02, "kv_bytes = input_len * kv_per_token", r"([\d.]+) GB/s across", lambda v: f"每秒 {int(float(v))} GB"),
    # 02, section 4: the fleet simulator
    (CH02, "fleet.size_chapter_fleet()", r"one instance within the SLOs: ([\d.]+) req/s", "⌈200 ÷ {}⌉"),
    (CH02, "fleet.size_chapter_fleet()", r"colocated\s+(\d+) instances, (\d+) GPUs", "合并部署 {} 个实例"),
    (CH02, "fleet.size_chapter_fleet()", r"colocated\s+\d+ instances, (\d+) GPUs", "（{} 张卡）就够了"),
    (CH02, "fleet.size_chapter_fleet()", r"disaggregated (\d+) prefill \+ (\d+) decode = (\d+) instances",
     lambda *_: None),
    (CH02, "fleet.size_chapter_fleet()", r"= \d+ instances, (\d+) GPUs", "{} 张卡），反而多一台"),
    (CH02, "rows = fleet.compare_at(12)", r"9 P \+ 3 D .* (\d+)% / 100%$", "prefill 池忙到 {}%"),
    (CH02, "rows = fleet.compare_at(12)", r"9 P \+ 3 D\s+96\s+[\d.]+%\s+\w+\s+(\d+) ms", lambda v: f"{float(v) / 1e3:.1f} s 左右"),
    (CH02, "rows = fleet.compare_at(12)", r"12 colocated\s+96\s+[\d.]+%\s+\w+\s+\d+ ms\s+([\d.]+) ms", "P99 TPOT {} ms"),
    (CH02, "rows = fleet.compare_at(12)", r"12 colocated\s+.*ms\s+([\d.]+) ms\s+\d+%$", lambda v: f"P99 ITL 约 {round(float(v), -1):.0f} ms"),
    (CH02, "rows = fleet.compare_at(12)", r"9 P \+ 3 D\s+96.*ms\s+([\d.]+) ms\s+([\d.]+) ms\s+\d+%", lambda v: f"约 {round(float(v))} ms"),
    # 02: the 11 P + 1 D row's TPOT against its ITL, and the busy column
    (CH02, "rows = fleet.compare_at(12)", r"11 P \+ 1 D\s+96\s+[\d.]+%\s+\w+\s+\d+ ms\s+([\d.]+) ms", "P99 TPOT {} ms，P99 ITL"),
    (CH02, "rows = fleet.compare_at(12)", r"11 P \+ 1 D\s+96.*ms\s+([\d.]+) ms\s+\d+% /", "P99 ITL 却只有 {} ms"),
    (CH02, "rows = fleet.compare_at(12)", r"11 P \+ 1 D .* (\d+)% / 100%$", "prefill 池的 {}% 和"),
    (CH02, "rows = fleet.compare_at(12)", r"10 P \+ 2 D .* (\d+)% / 100%$", "和 {}% 也不说明"),
    (CH02, "fleet.format_pd_waits(rows)", r"^11 P \+ 1 D\s+(\d+) s", "11 P + 1 D 要到 {} s"),
    (CH02, "fleet.format_pd_waits(rows)", r"^10 P \+ 2 D\s+(\d+) s", "10 P + 2 D 要到 {} s"),
    (CH02, "fleet.format_pd_waits(rows)", r"^11 P \+ 1 D\s+\d+ s\s+([\d.]+) s", "中位数要等 {} s"),
    (CH02, "fleet.format_pd_waits(rows)", r"^11 P \+ 1 D\s+\d+ s\s+[\d.]+ s\s+([\d.]+) s", "慢的要 {} s"),
    (CH02, "fleet.format_pd_waits(rows)", r"^11 P \+ 1 D\s+\d+ s\s+[\d.]+ s\s+[\d.]+ s\s+([\d.]+) ms", "TPOT 也就是 {} ms"),
    (CH02, "fleet.format_pd_waits(rows)", r"^11 P \+ 1 D.*ms\s+([\d.]+) ms\s+[\d.]+ ms$", "P99 TPOT 到了 {} ms"),
    (CH02, "explain.busy_fraction", r"busy (\d+)% of the time", "GPU 仍有 {}% 的时间在忙"),
    # 02: spares for 99.9%
    (CH02, "reliability.format_spare_rows", r"^\s+99.0%\s+([\d.]+)%", "只有 {}%"),
    (CH02, "reliability.format_spare_rows", r"^\s+99.0%\s+[\d.]+%\s+(\d+)", "多备 {} 台"),
    (CH02, "reliability.format_spare_rows", r"^\s+99.0%\s+[\d.]+%\s+\d+\s+([\d.]+)%", "就到 {}%"),
    (CH02, "reliability.format_spare_rows", r"^\s+95.0%\s+[\d.]+%\s+(\d+)", "95% 时要备 {} 台"),
    (CH02, "reliability.format_spare_rows", r"each up 95%: capacity short ([\d.]+) min", "每月容量不足约 {} 分钟"),
    (CH02, "fleet.compare_routers(4)", r"least_requests\s+4\s+(\d+)%", "只有 {}% 的 token 命中"),
    (CH02, "fleet.compare_routers(4)", r"prefix_aware\s+4\s+(\d+)%", "命中 {}%"),
    (CH02, "fleet.compare_routers(4)", r"least_requests\s+4\s+\d+%\s+([\d.]+)%", "只有 {}% 的请求达标"),
    (CH02, "fleet.compare_routers(4)", r"prefix_aware\s+4\s+\d+%\s+([\d.]+)%", lambda v: f"后者 {float(v):.0f}% 达标"),
]


def _quote(fmt, value):
    return fmt(value) if callable(fmt) else fmt.format(value)


@pytest.mark.parametrize("name,marker,pattern,fmt", FIGURES, ids=[f"{n[:2]}-{i:02d}" for i, (n, *_ ) in enumerate(FIGURES)])
def test_prose_quotes_the_printed_figure(name, marker, pattern, fmt):
    value = grab(name, marker, pattern)
    quote = _quote(fmt, value)
    if quote is not None:
        assert quote in prose(name), f"{name}: the cell printed {value}, but the prose has no {quote!r}"


def test_pd_needs_one_instance_more_and_costs_twenty_dollars_more():
    out = stdout_of(CH02, "fleet.size_chapter_fleet()")
    colo = int(re.search(r"colocated\s+(\d+) instances", out).group(1))
    p, d, total = map(int, re.search(r"(\d+) prefill \+ (\d+) decode = (\d+) instances", out).groups())
    usd = [int(x.replace(",", "")) for x in re.findall(r"\$([\d,]+)/h", out)]
    text = prose(CH02)
    assert total == colo + 1 and "反而多一台" in text
    assert f"PD 分离要 {total} 个实例（{p} 个 prefill + {d} 个 decode" in text
    assert f"{colo} 个实例对 {total} 个" in text and f"每小时少 ${usd[1] - usd[0]}" in text
    assert "cheapest   colocated" in out


def test_the_old_crossover_is_gone():
    assert "118" not in prose(CH01)


def test_the_stale_figures_are_gone():
    ch02 = prose(CH02).replace("16.75830078125", "")       # the bisection's exact answer, quoted once
    for stale in ("97%～100%", "0.27 req/s", "16.75", "16.76", "16.7 req/s", "15.93", "五分之一", "也有 97%"):
        assert stale not in ch02, stale
    assert "每次压测 1500 个请求，精确到 0.1%" not in ch02
    assert "按它的算力上限等比例缩放" not in prose(CH01)


def test_the_command_shown_is_the_one_with_the_chapters_factors():
    out = stdout_of(CH02, "fleet.size_chapter_fleet()")
    command = out.splitlines()[0]
    assert command.startswith("python -m sim fleet --model llama-3-70b --gpu h100-sxm --tp 8 --dtype fp8")
    for flag in ("--mfu 0.4", "--step-overhead 0.0015", "--bandwidth-util 1.0", "--router least_requests",
                 "--duration 120", "--gpu-hour-usd 2.5"):
        assert flag in command, flag


def test_the_handbooks_three_lines_and_the_steady_answer_both_show():
    out = stdout_of(CH02, 'for search in ("chapter", "auto")')
    assert ("search='chapter' 16.8 req/s per instance (16.75830078125): 12 instances, 16 with 30% headroom "
            "(128 H100), $320/h, $0.89") in out
    text = prose(CH02)
    assert "单实例约 16.8 req/s，200 QPS 要 12 个实例" in text        # the handbook's, where its script runs


def test_one_rate_one_rounding_and_the_exact_bisection():
    """Chapter 02 writes each search's rate one way (one decimal), quotes the bisection's exact
    answer where it prints, and says the 5% between the two is not the searches' tolerance."""
    out = stdout_of(CH02, 'for search in ("chapter", "auto")')
    exact = {m.group(1): float(m.group(3)) for m in re.finditer(r"search='(\w+)'\s+([\d.]+) req/s per instance \(([\d.]+)\)", out)}
    assert exact["chapter"] == 16.75830078125
    text = prose(CH02)
    assert "16.75830078125 req/s" in text and f"{exact['auto']:.1f} req/s" in text
    gap = 1 - exact["auto"] / exact["chapter"]
    assert f"差了 {gap:.0%}" in text and "0.015 req/s" in text and "0.1%" in text
