"""The system-design chapter's example, run unchanged, prints the handbook's three lines."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim import Setup, simulate, summarize
from sim import BracketError, max_rate

HERE = Path(__file__).parent
EXAMPLE = HERE / "data" / "chapter_example.py"
SEED = HERE.parent.parent / "shared" / "seed" / "system-design-chapter.zh.txt"

EXPECTED = [
    "低负载：TTFT 48 ms，TPOT 4.3 ms",
    "单实例满足 SLO 的最大速率约 16.8 req/s；200 QPS 需要 12 个实例，加 30% 余量为 16 个（128 张 H100）",
    "按每卡每小时 $2.5 计：每小时 $320，约合每百万输出 token $0.89",
]


def chapter_instance():
    kv = 2 * 80 * 8 * 128 * 1
    return Setup(params=70.6e9, weight_bytes=70.6e9, kv_bytes_per_token=kv,
                 kv_capacity_tokens=int((8 * 80e9 * 0.9 - 70.6e9) / kv),
                 peak_flops=8 * 1979e12, bandwidth=8 * 3.35e12, mfu=0.4, step_overhead=1.5e-3,
                 max_num_batched_tokens=8192, max_num_seqs=512)


def test_chapter_code_prints_the_handbook_lines():
    run = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == EXPECTED


def _code_lines(text):
    """Code with comments and blank lines dropped, for comparing with the seed."""
    lines = []
    for line in text.splitlines():
        code = re.sub(r"\s+#[^\"']*$", "", line).rstrip()
        if code and not code.lstrip().startswith("#"):
            lines.append(code)
    return lines


@pytest.mark.skipif(not SEED.exists(), reason="the seed chapter is not beside this checkout")
def test_example_is_the_seed_code_unchanged():
    seed = SEED.read_text(encoding="utf-8")
    start = seed.index("import math\nfrom sim import")
    end = seed.index("\n\n低负载", start)
    assert _code_lines(EXAMPLE.read_text(encoding="utf-8")) == _code_lines(seed[start:end])


def test_chapter_figures_in_full_precision():
    inst = chapter_instance()
    assert inst.kv_capacity_tokens == 3_084_716
    low = summarize(simulate(inst, 1, 300, 2000, 500), 2.0, 0.05)
    assert round(low["ttft_p50"] * 1e3) == 48
    assert round(low["tpot_p50"] * 1e3, 1) == 4.3
    assert max_rate(inst, (2000, 500), 2.0, 0.05, method="bisect") == 16.75830078125


def test_max_rate_reports_a_wrong_bracket():
    inst = chapter_instance()
    with pytest.raises(BracketError, match="raise hi"):
        max_rate(inst, (2000, 500), 2.0, 0.05, method="bisect", lo=1.0, hi=8.0, iterations=3)
    with pytest.raises(BracketError, match="lower lo"):
        max_rate(inst, (2000, 500), 2.0, 0.05, method="bisect", lo=30.0, hi=60.0, iterations=3)
