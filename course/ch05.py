"""Chapter 05 (quantized deployment): weight and KV formats followed through memory, KV capacity,
step time, capacity within the SLOs and cost, from the calibrated presets; and the chapter's panel.

Every figure is a small function of ``sim``: ``presets.instance`` (the formats are
``sim.presets.dtypes``), ``Setup.step_time`` and ``sim.plan``. Plans are cached (a panel move that
repeats a choice answers at once). The service is chapter 02's: 200 QPS, 2000 tokens in, 500 out,
p99 TTFT < 2 s, p99 TPOT < 50 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from course import memo, plots
from course.kit import DropdownPanel, rows_html, text_table
from sim import plan, presets
from sim.presets.dtypes import WEIGHT_FORMATS
from sim.setup import attention_pairs, smooth_max

GB = 1e9
SERVICE = dict(qps=200, input_len=2000, output_len=500, ttft_slo=2.0, tpot_slo=0.05)
MODEL = "llama-3-70b"
# (weights, KV) pairs the chapter compares; int4 is weight-only, so its KV is a format of its own
FORMATS = (("bf16", "bf16"), ("fp8", "fp8"), ("int8", "int8"), ("int4", "fp8"), ("fp4", "fp4"))
TPS = (1, 2, 4, 8)
BATCHES = (1, 4, 16, 32, 64, 128, 256, 512)
PANEL_GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x")
PANEL_MODELS = ("llama-3-70b", "llama-3-8b", "qwen2.5-72b", "mixtral-8x7b")

# Accuracy is the cost side of a format; the simulator does not model it. What published studies
# measured (stated in the chapter, never simulated):
ACCURACY = {
    "bf16": "基准",
    "fp8": "几乎无损：Llama-3.1 全系（8B～405B）平均恢复 ≥ 99%（Kurtic 等，2024，arXiv:2411.02355）",
    "int8": "调好（SmoothQuant 类平滑 + GPTQ）时掉 1%～3%（同上）",
    "int4": "仅权重 INT4（GPTQ/AWQ）与 INT8 相当，小模型掉得多些（同上）",
    "fp4": "NVFP4：DeepSeek-R1 等在关键任务上比 FP8 掉 ≤ 1%（NVIDIA 技术博客，2025）",
}


def price(gpu: str) -> float | None:
    """USD per GPU-hour (``sim.presets.gpu_hour_usd``'s list prices), None where there is none."""
    try:
        return presets.gpu_hour_usd(gpu)
    except ValueError:
        return None


# --- memory ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MemoryRow:
    weight_dtype: str
    kv_dtype: str
    weights_gb_per_gpu: float
    kv_kib_per_token: float
    kv_tokens: int | None          # KV-cache capacity of the instance (None: the weights do not fit)
    sequences: int | None          # full-length requests (input + output tokens) the KV holds at once
    reason: str = ""


def memory_row(model: str, gpu: str, tp: int, weight_dtype: str, kv_dtype: str,
               input_len: int = SERVICE["input_len"], output_len: int = SERVICE["output_len"]) -> MemoryRow:
    """What one instance holds: weights per GPU, KV bytes per token, KV capacity and the full-length
    requests it fits (the calibrated preset's memory: the driver's figure less a runtime reserve)."""
    m = presets.model(model)
    weights = m.total_params * WEIGHT_FORMATS[weight_dtype].bytes / tp / GB
    kv = presets.kv_bytes_per_token(m, tp, kv_dtype) / 1024
    try:
        s = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    except ValueError as e:
        return MemoryRow(weight_dtype, kv_dtype, weights, kv, None, None, str(e))
    return MemoryRow(weight_dtype, kv_dtype, weights, kv, s.kv_capacity_tokens,
                     s.kv_capacity_tokens // (input_len + output_len))


# --- step time ---------------------------------------------------------------------------------

def decode_step_s(setup, batch: int, context: int = SERVICE["input_len"]) -> float:
    """One decode step of ``batch`` sequences, each with ``context`` tokens of KV."""
    return setup.step_time(batch, batch * context, 0, batch)


def prefill_step_s(setup, tokens: int = 8192) -> float:
    """One prefill chunk of ``tokens`` prompt tokens from the start of a prompt."""
    return setup.step_time(tokens, 0, attention_pairs(0, tokens))


def gemm_s(setup, tokens: int) -> float:
    """The step's matmuls alone (no KV, no overhead): their FLOPs and the weight read combined as the
    step model combines them (``roofline_p`` 0: the slower; else their p-norm, the calibrated
    presets' rounded corner). This is what a kernel benchmark such as Marlin's times."""
    compute = 2 * setup.params * tokens / (setup.peak_flops * setup.mfu)
    memory = setup.weight_bytes / setup.bandwidth
    if setup.roofline_p == 0:
        return max(compute, memory)
    return smooth_max(compute, memory, setup.roofline_p, math.sqrt)


def crossover_batch(model: str = MODEL, gpu: str = "h100-sxm", tp: int = 8, kv_dtype: str = "fp8",
                    context: int = SERVICE["input_len"], limit: int = 4096) -> int | None:
    """The smallest decode batch at which weight-only INT4's step is no faster than FP8's (same KV):
    below it INT4's smaller weight read wins, above it FP8's faster tensor cores do."""
    int4 = presets.instance(model, gpu, tp=tp, weight_dtype="int4", kv_dtype=kv_dtype)
    fp8 = presets.instance(model, gpu, tp=tp, weight_dtype="fp8", kv_dtype=kv_dtype)
    for b in range(1, limit + 1):
        if decode_step_s(int4, b, context) >= decode_step_s(fp8, b, context):
            return b
    return None


# --- capacity and cost -------------------------------------------------------------------------

@dataclass(frozen=True)
class CostRow:
    model: str
    gpu: str
    tp: int
    weight_dtype: str
    kv_dtype: str
    rate: float | None             # req/s one instance serves within the SLOs
    instances: int | None          # with 30% headroom
    gpus: int | None
    usd_per_million: float | None  # per million output tokens
    bound: str | None
    reason: str = ""

    @property
    def feasible(self) -> bool:
        return self.gpus is not None


@lru_cache(maxsize=4096)
@memo.shipped("ch05.cost_row", "course/ch05.py")
def cost_row(model: str, gpu: str, tp: int, weight_dtype: str, kv_dtype: str) -> CostRow:
    """``sim.plan`` for the chapter's service on one option; infeasible options keep their reason."""
    gpu = presets.gpu_key(gpu)
    usd = price(gpu)
    try:
        setup = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
        if usd is None:
            raise ValueError(f"no list price for {gpu}")
        p = plan(SERVICE["qps"], setup, SERVICE["input_len"], SERVICE["output_len"], SERVICE["ttft_slo"],
                 SERVICE["tpot_slo"], gpus_per_instance=tp, gpu_hour_usd=usd)
    except ValueError as e:
        return CostRow(model, gpu, tp, weight_dtype, kv_dtype, None, None, None, None, None, str(e).split(";")[0])
    return CostRow(model, gpu, tp, weight_dtype, kv_dtype, p.rate_per_instance, p.instances, p.gpus,
                   p.usd_per_million_output_tokens, p.bound)


def cheapest(model: str, gpu: str, weight_dtype: str, kv_dtype: str, tps=TPS) -> CostRow:
    """The cheapest tensor-parallel size for one format on one GPU (fewest GPUs on a tie)."""
    rows = [cost_row(model, gpu, tp, weight_dtype, kv_dtype) for tp in tps]
    ok = [r for r in rows if r.feasible]
    if not ok:
        return rows[-1]
    return min(ok, key=lambda r: (r.usd_per_million, r.gpus, r.tp))


def cost_table(model: str = MODEL, gpus=("h100-sxm", "h200", "b200"), formats=FORMATS) -> list[CostRow]:
    """For each GPU and format, the cheapest TP size's plan (formats a GPU lacks keep their reason)."""
    return [cheapest(model, g, w, kv) for g in gpus for w, kv in formats]


def step_figure(model: str = MODEL, gpu: str = "h100-sxm", tp: int = 8, formats=FORMATS[:4]):
    """Decode step time against batch (left, log x) and the 8192-token prefill chunk (right) per
    format: the two ends a format trades. Lines are labelled "weights/KV"."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 3.3))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16, top=0.88, wspace=0.3)
    left, right = fig.subplots(1, 2)
    names, prefill = [], []
    for w, kv in formats:
        s = presets.instance(model, gpu, tp=tp, weight_dtype=w, kv_dtype=kv)
        left.plot(BATCHES, [decode_step_s(s, b) * 1e3 for b in BATCHES], "o-", label=f"{w}/{kv}")
        names.append(f"{w}/{kv}")
        prefill.append(prefill_step_s(s) * 1e3)
    left.set_xscale("log", base=2)
    left.set_xlabel("decode batch (sequences, 2000 tokens of context each)")
    left.set_ylabel("step time (ms)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    right.bar(names, prefill, color=["C0", "C1", "C2", "C3", "C4"][:len(names)])
    right.set_ylabel("8192-token prefill chunk (ms)")
    right.grid(alpha=0.3, axis="y")
    fig.suptitle(f"{model} on {tp} x {presets.gpu(gpu).name}")
    return fig


# --- tables ------------------------------------------------------------------------------------

table = text_table


def cost_cells(r: CostRow) -> list:
    fmt = f"{r.weight_dtype}/{r.kv_dtype}"
    if not r.feasible:
        return [r.gpu, fmt, "-", "-", "-", "-", r.reason[:60]]
    return [r.gpu, fmt, f"TP{r.tp}", f"{r.rate:.1f}", r.gpus, f"${r.usd_per_million:.2f}", r.bound]


COST_HEAD = ["gpu", "weights/KV", "best TP", "req/s/inst", "GPUs", "$/1M out", "bound"]


# --- the panel ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    memory: MemoryRow
    row: CostRow
    decode_ms: tuple               # decode step (ms) at BATCHES
    bf16_decode_ms: tuple          # the same model and TP in BF16 (None where BF16 does not fit)


def answer(model: str, gpu: str, weight_dtype: str, kv_dtype: str, tp: int | str = "auto") -> Answer:
    """The panel's figures for one choice: memory, the plan (the cheapest TP when ``tp`` is "auto")
    and decode step times against BF16's."""
    row = cheapest(model, gpu, weight_dtype, kv_dtype) if tp == "auto" else cost_row(model, gpu, int(tp),
                                                                                       weight_dtype, kv_dtype)
    use_tp = row.tp
    mem = memory_row(model, gpu, use_tp, weight_dtype, kv_dtype)
    return Answer(mem, row, *_decode_curves(model, gpu, use_tp, weight_dtype, kv_dtype))


@lru_cache(maxsize=1024)
def _decode_curves(model, gpu, tp, weight_dtype, kv_dtype):
    def curve(w, kv):
        try:
            s = presets.instance(model, gpu, tp=tp, weight_dtype=w, kv_dtype=kv)
        except ValueError:
            return None
        return tuple(decode_step_s(s, b) * 1e3 for b in BATCHES)
    return curve(weight_dtype, kv_dtype), curve("bf16", "bf16")


def answer_html(a: Answer) -> str:
    r, m = a.row, a.memory
    lines = [("权重 / KV 格式", f"{r.weight_dtype} / {r.kv_dtype}"),
             ("张量并行", f"TP={r.tp}"),
             ("每卡权重", f"{m.weights_gb_per_gpu:.1f} GB"),
             ("每 token 的 KV", f"{m.kv_kib_per_token:.0f} KiB")]
    if m.kv_tokens is not None:
        lines.append(("KV 容量", f"{m.kv_tokens:,} token（约 {m.sequences:,} 个 2500 token 的请求）"))
    if r.feasible:
        lines += [("单实例满足 SLO 的速率", f"{r.rate:.1f} req/s"),
                  ("200 QPS 需要", f"{r.instances} 个实例，{r.gpus} 张卡（含 30% 余量）"),
                  ("每百万输出 token", f"${r.usd_per_million:.2f}（每卡每小时 ${price(r.gpu):g}）"),
                  ("瓶颈", r.bound),
                  ("精度代价（文献，未模拟）", ACCURACY.get(r.weight_dtype, ""))]
    else:
        lines.append(("不可行", r.reason))
    return rows_html(lines)


def decode_chart(a: Answer) -> plots.Chart:
    chart = plots.Chart(1, width=520, height=240, title="decode 一步的时间（每序列 2000 token 上下文）")
    if a.decode_ms is not None:
        chart.add(0, f"{a.row.weight_dtype}/{a.row.kv_dtype}", BATCHES, a.decode_ms, color="#1f77b4")
    if a.bf16_decode_ms is not None:
        chart.add(0, "bf16/bf16", BATCHES, a.bf16_decode_ms, color="#999999", dash="4 3")
    chart.axes(0, xlabel="batch（同时 decode 的序列数）", ylabel="ms", logx=True)
    return chart


class QuantPanel(DropdownPanel):
    """Model x GPU x weight format x KV format x TP -> memory, plan, cost and the decode curve.
    Each move is cached plans and arithmetic: it answers in the caller (no worker thread)."""

    width, per_row, has_chart = "210px", 3, True

    def controls_spec(self) -> dict:
        return {
            "model": ("模型", PANEL_MODELS, MODEL),
            "gpu": ("GPU", PANEL_GPUS, "h100-sxm"),
            "weight_dtype": ("权重", ("bf16", "fp8", "int8", "int4", "fp4"), "fp8"),
            "kv_dtype": ("KV", ("bf16", "fp8", "int8", "fp4"), "fp8"),
            "tp": ("TP", ("auto", 1, 2, 4, 8), "auto"),
        }

    def update(self) -> Answer:
        self.answer = answer(**self.choice())
        self.table.value = answer_html(self.answer)
        self.figure = decode_chart(self.answer)
        self.chart.value = self.figure.svg()
        return self.answer


def quant_panel() -> QuantPanel:
    return QuantPanel()
