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
    (CH01, "compute ceiling", r"= ([\d.]+) req/s", "约 {} 个请求"),
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
    (CH02, "TPOT floor", r"\+ 1.5 ms overhead = ([\d.]+) ms", "约 {} ms"),
    (CH02, "TPOT floor", r"= ([\d.]+) req/s", "即 {} req/s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"32768 tokens in: prefill ([\d.]+) s", "0.74 s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"32768 tokens in: prefill [\d.]+ s,\s+([\d.]+) req/s", "约 {} req/s"),
    (CH02, "for prompt in (2000, 8192, 32768)", r"2000 tokens in: .* (\d+)% of the compute ceiling", "这个上限的 {}%"),
    (CH02, "kv_bytes = input_len * kv_per_token", r"([\d.]+) GB/s across", lambda v: f"每秒 {int(float(v))} GB"),
    # 02, section 4: the fleet simulator
    (CH02, "fleet.size_chapter_fleet()", r"colocated\s+(\d+) instances, (\d+) GPUs", "合并部署 {} 个实例"),
    (CH02, "fleet.size_chapter_fleet()", r"colocated\s+\d+ instances, (\d+) GPUs", "（{} 张卡）就够了"),
    (CH02, "fleet.size_chapter_fleet()", r"disaggregated (\d+) prefill \+ (\d+) decode = (\d+) instances",
     lambda *_: None),
    (CH02, "fleet.size_chapter_fleet()", r"= \d+ instances, (\d+) GPUs", "{} 张卡），反而多一台"),
    (CH02, "fleet.compare_at(12)", r"9 P \+ 3 D .* (\d+)% / 100%$", "prefill 池忙到 {}%"),
    (CH02, "fleet.compare_at(12)", r"9 P \+ 3 D\s+96\s+[\d.]+%\s+\w+\s+(\d+) ms", lambda v: f"{float(v) / 1e3:.1f} s 左右"),
    (CH02, "fleet.compare_at(12)", r"12 colocated\s+96\s+[\d.]+%\s+\w+\s+\d+ ms\s+([\d.]+) ms", "P99 TPOT {} ms"),
    (CH02, "fleet.compare_at(12)", r"12 colocated\s+.*ms\s+([\d.]+) ms\s+\d+%$", lambda v: f"P99 ITL 约 {round(float(v), -1):.0f} ms"),
    (CH02, "fleet.compare_at(12)", r"9 P \+ 3 D\s+96.*ms\s+([\d.]+) ms\s+([\d.]+) ms\s+\d+%", lambda v: f"约 {round(float(v))} ms"),
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
