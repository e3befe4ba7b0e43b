"""Chapter 07 (prefill-decode disaggregation): when PD wins, on the Azure LLM inference traces of
2023 (a code service and a conversation service, the Splitwise paper's two workloads).

Every fleet here has the same GPUs: ``INSTANCES`` TP-8 instances of the chapter's 70B FP8 model
on H100 (calibrated preset), either all colocated (chunked prefill) or split xPyD. A layout is run
once per load on a window of the trace replayed faster (``sim.workload.trace(..., speed=)``); any
SLO pair is then judged from the per-request TTFT and TPOT of those runs, so a table over many SLO
pairs costs no more simulation than one. Capacity at an SLO pair = the largest replayed rate of the
grid at which at least ``TARGET`` of the requests meet both SLOs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim import presets, trace, workload
from sim.fleet import Fleet, run_fleet
from sim.metrics import summarize
from course.kit import DropdownPanel, rows_html, text_table
from course import memo, plots

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
TRACES = {"code": DATA / "AzureLLMInferenceTrace_code.csv.gz",
          "conv": DATA / "AzureLLMInferenceTrace_conv.csv.gz"}
TRACE_NAMES = {"code": "代码补全（code）", "conv": "对话（conversation）"}
INSTANCES = 4                    # TP-8 instances per fleet: 32 GPUs
GPUS_PER_INSTANCE = 8
WINDOW_S = (600.0, 1200.0)       # the trace's own time replayed: from 10 to 20 minutes in
TARGET = 0.99
# Replayed request rates (req/s over the whole fleet) per trace: from light to past saturation.
RATES = {"code": (2, 4, 6, 8, 10, 12, 16, 20), "conv": (10, 20, 30, 40, 50, 60, 70)}
COLOCATED_CHUNK = 2048           # the colocated fleet's step budget (a smaller chunk protects TPOT)
# KV links between a prefill and a decode instance, as (GB/s, latency s) for one instance pair whose
# TP shards move in parallel (one NIC per GPU):
LINKS = {
    # GB200 NVL72: NVLink 5 is 1.8 TB/s per GPU both directions, 900 GB/s one way. Hypothetical for
    # the chapter's H100 instances: an HGX H100's NVLink domain is the 8 GPUs of one TP-8 instance.
    "nvlink": (8 * 900.0, 10e-6),
    # 8 x 400 Gb/s NICs with GPUDirect RDMA: 400 GB/s at line rate, but the Mooncake Transfer Engine
    # README reports 190 GB/s measured on 8 x 400 Gbps RoCE (40 GB transfers); the measured figure is
    # used. The 1 ms covers handshake and completion notification (an assumption, not a measurement).
    "infiniband": (190.0, 1e-3),
    "ethernet": (12.5, 2e-3),         # one 100 Gb/s Ethernet port, TCP, at line rate (optimistic)
}
LINK_NAMES = {"nvlink": "NVLink（NVL72 机柜内，假设）", "infiniband": "RDMA 8 × 400 Gb/s（实测 190 GB/s）",
              "ethernet": "以太网 100 Gb/s"}
SLO_TTFT = (0.5, 1.0, 2.0)
SLO_TPOT = (0.02, 0.03, 0.05)


def setup():
    """The chapter's instance: Llama-3-70B in FP8 (weights and KV) on 8 x H100, calibrated."""
    return presets.instance("llama-3-70b", "h100-sxm", tp=8, weight_dtype="fp8", kv_dtype="fp8")


# --- the traces ----------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def read(name: str) -> trace.Trace:
    if name not in TRACES:
        raise ValueError(f"trace must be one of {sorted(TRACES)}, got {name!r}")
    return trace.azure(TRACES[name])


@dataclass(frozen=True)
class TraceStats:
    name: str
    requests: int
    hours: float
    rate: float
    input_median: float
    input_p99: float
    output_median: float
    output_p99: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float

    @property
    def prefill_to_decode(self) -> float:
        return self.prefill_tokens_per_s / self.decode_tokens_per_s


def stats(name: str) -> TraceStats:
    t = read(name)
    inp, out = np.asarray(t.input_len, float), np.asarray(t.output_len, float)
    span = t.duration_s
    return TraceStats(name, len(t), span / 3600, len(t) / span, float(np.median(inp)), float(np.percentile(inp, 99)),
                      float(np.median(out)), float(np.percentile(out, 99)), inp.sum() / span, out.sum() / span)


def load(name: str, rate: float) -> workload.Workload:
    """The trace's window ``WINDOW_S`` replayed at ``rate`` requests per second on average."""
    t = read(name).window(WINDOW_S[0], WINDOW_S[1] - WINDOW_S[0])
    return workload.trace(t, speed=rate * t.duration_s / len(t) if len(t) > 1 else 1.0)


# --- layouts and runs ----------------------------------------------------------------------------

def layouts(n: int = INSTANCES) -> tuple[str, ...]:
    """"colocated" and every xPyD split of n instances."""
    return ("colocated", "colocated-2k") + tuple(f"{p}P{n - p}D" for p in range(1, n))


def fleet(layout: str, link: str = "infiniband") -> Fleet:
    s = setup()
    if layout.startswith("colocated"):
        if layout == "colocated-2k":          # chunked prefill with a smaller budget: shorter mixed steps
            s = s.replace(max_num_batched_tokens=COLOCATED_CHUNK)
        return Fleet.of(s, INSTANCES, router="least_requests", gpus_per_instance=GPUS_PER_INSTANCE)
    p, d = (int(x) for x in layout.rstrip("D").split("P"))
    gbs, latency = LINKS[link]
    return Fleet.pd(s, p, s, d, router="least_requests", link_gbs=gbs, link_latency_s=latency,
                    gpus_per_instance=GPUS_PER_INSTANCE)


@dataclass(frozen=True)
class Run:
    ttft: np.ndarray               # per request, seconds
    tpot: np.ndarray               # per request (NaN for one-token answers)
    e2e: np.ndarray                # per request: arrival to last token, seconds
    itl_p99_s: float               # over every decode gap of the run (sim.metrics.summarize)
    transfer_p99_s: float | None   # PD: p99 of the KV transfers


@lru_cache(maxsize=512)
def run(name: str, layout: str, rate: float, link: str = "infiniband") -> Run:
    r = run_fleet(fleet(layout, link), load(name, rate))
    x = r.transfer_s[~np.isnan(r.transfer_s)]
    return Run(np.asarray(r.ttft), np.asarray(r.tpot), np.asarray(r.e2e), summarize(r, 1.0, 1.0)["itl_p99"],
               float(np.percentile(x, 99)) if len(x) else None)


def attainment(r: Run, ttft_slo: float, tpot_slo: float | None, *, e2e_slo: float | None = None) -> float:
    """Share of requests meeting every SLO given (a one-token answer has no TPOT: it meets that one).
    ``tpot_slo=None`` leaves TPOT unjudged; ``e2e_slo`` adds a limit on arrival-to-last-token time,
    the latency a code-completion user waits for."""
    ok = r.ttft <= ttft_slo
    if tpot_slo is not None:
        ok &= np.isnan(r.tpot) | (r.tpot <= tpot_slo)
    if e2e_slo is not None:
        ok &= r.e2e <= e2e_slo
    return float(np.mean(ok))


def capacity(name: str, layout: str, ttft_slo: float, tpot_slo: float | None, link: str = "infiniband",
             target: float = TARGET, *, e2e_slo: float | None = None) -> float:
    """Largest rate of ``RATES[name]`` at which ``target`` of the requests meet the SLOs (0: none).
    Rates are tried from the lowest; the first failure ends the search (load only makes it worse).
    The answer is a point of the grid: the true capacity lies between it and the next rate."""
    best = 0.0
    for rate in RATES[name]:
        if attainment(run(name, layout, rate, link), ttft_slo, tpot_slo, e2e_slo=e2e_slo) < target:
            break
        best = float(rate)
    return best


def misses(r: Run, ttft_slo: float, tpot_slo: float) -> tuple[float, float]:
    """(share of requests over the TTFT SLO, share over the TPOT SLO): which SLO a run fails on."""
    return float(np.mean(r.ttft > ttft_slo)), float(np.mean(~np.isnan(r.tpot) & (r.tpot > tpot_slo)))


def burstiness(name: str, bin_s: float = 10.0) -> tuple[float, float]:
    """(mean, peak) prompt tokens per second of the whole trace, the peak over ``bin_s`` windows:
    what a prefill pool must absorb, on average and in the worst burst."""
    t = read(name)
    arr, inp = np.asarray(t.arrival), np.asarray(t.input_len, float)
    bins = np.histogram(arr, bins=np.arange(0.0, arr[-1] + bin_s, bin_s), weights=inp)[0] / bin_s
    return float(inp.sum() / t.duration_s), float(bins.max())


def per_gpu(rate: float) -> float:
    return rate / (INSTANCES * GPUS_PER_INSTANCE)


@dataclass(frozen=True)
class Verdict:
    trace: str
    ttft_slo: float
    tpot_slo: float
    colocated: float               # req/s of the better colocated fleet (8192- or 2048-token chunks)
    best_pd: str                   # the best split
    pd: float                      # its req/s

    @property
    def winner(self) -> str:
        if self.pd == self.colocated:
            return "tie"
        return "PD" if self.pd > self.colocated else "colocated"


def verdict(name: str, ttft_slo: float, tpot_slo: float, link: str = "infiniband") -> Verdict:
    pd = {lay: capacity(name, lay, ttft_slo, tpot_slo, link) for lay in layouts()[2:]}
    best = max(pd, key=lambda k: (pd[k], -int(k.split("P")[0])))
    colocated = max(capacity(name, lay, ttft_slo, tpot_slo, link) for lay in layouts()[:2])
    return Verdict(name, ttft_slo, tpot_slo, colocated, best, pd[best])


def transfer_ms(tokens: int, link: str) -> float:
    """One prompt's KV over ``link`` (the chapter's 70B FP8: 160 KiB per token), in ms."""
    gbs, latency = LINKS[link]
    return (tokens * setup().kv_bytes_per_token / (gbs * 1e9) + latency) * 1e3


table = text_table


# --- figures and the panel -----------------------------------------------------------------------

def attainment_figure(name: str, ttft_slo: float, tpot_slo: float, link: str = "infiniband", lays=None):
    """Share of requests meeting both SLOs against the replayed rate, one line per layout (labelled
    by layout), with the target as a dashed line."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 3.2))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.88)
    ax = fig.subplots()
    for lay in lays or layouts():
        ys = [attainment(run(name, lay, r, link), ttft_slo, tpot_slo) for r in RATES[name]]
        ax.plot(RATES[name], ys, "o-", label=lay)
    ax.axhline(TARGET, color="#888", ls="--", label=f"target {TARGET:.0%}")
    ax.set_xlabel(f"replayed rate (req/s over {INSTANCES} x TP{GPUS_PER_INSTANCE} instances)")
    ax.set_ylabel("share meeting both SLOs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.suptitle(f"{name} trace, TTFT <= {ttft_slo:g} s, TPOT <= {tpot_slo * 1e3:g} ms")
    return fig


@dataclass(frozen=True)
class PanelAnswer:
    capacity: float                # req/s
    per_gpu: float
    ttft_p99_s: float | None       # at that rate (None when no rate passes)
    itl_p99_s: float | None
    transfer_p99_s: float | None
    curve: tuple                   # attainment at each rate of RATES[trace]


@lru_cache(maxsize=1024)
@memo.shipped("ch07.panel_answer", "course/ch07.py", "data/traces/AzureLLMInferenceTrace_code.csv.gz",
              "data/traces/AzureLLMInferenceTrace_conv.csv.gz")
def panel_answer(name: str, layout: str, ttft_slo: float, tpot_slo: float, link: str) -> PanelAnswer:
    """The panel's figures for one position: from the shipped table where it holds it (``course.memo``,
    the positions of ``course.panel_grids.chapter_07``), else from the runs (cached)."""
    cap = capacity(name, layout, ttft_slo, tpot_slo, link)
    curve = tuple(attainment(run(name, layout, r, link), ttft_slo, tpot_slo) for r in RATES[name])
    if cap:
        r = run(name, layout, cap, link)
        return PanelAnswer(cap, per_gpu(cap), float(np.percentile(r.ttft, 99)), r.itl_p99_s, r.transfer_p99_s, curve)
    return PanelAnswer(0.0, 0.0, None, None, None, curve)


class PDPanel(DropdownPanel):
    """Trace x SLO pair x link x layout -> capacity per GPU, p99 TTFT / ITL at it, and the attainment
    curve. Runs are cached (the notebook has already run every layout on InfiniBand); a new link runs
    its layout's rates once (a few seconds), then answers at once."""

    width, per_row, has_chart = "230px", 3, True

    def controls_spec(self) -> dict:
        return {
            "name": ("流量", [(v, k) for k, v in TRACE_NAMES.items()], "conv"),
            "ttft_slo": ("TTFT SLO (s)", SLO_TTFT, 1.0),
            "tpot_slo": ("TPOT SLO (s)", SLO_TPOT, 0.03),
            "link": ("KV 链路", [(v, k) for k, v in LINK_NAMES.items()], "infiniband"),
            "layout": ("部署", layouts(), "3P1D"),
        }

    def update(self) -> PanelAnswer:
        c = self.choice()
        a = self.answer = panel_answer(c["name"], c["layout"], c["ttft_slo"], c["tpot_slo"], c["link"])
        ms = lambda x: "-" if x is None else f"{x * 1e3:,.0f} ms"    # noqa: E731
        rows = [("满足 SLO 的最大速率", f"{a.capacity:g} req/s（{INSTANCES * GPUS_PER_INSTANCE} 张卡）"),
                ("每张卡", f"{a.per_gpu:.2f} req/s"),
                ("该速率下 P99 TTFT", ms(a.ttft_p99_s)), ("该速率下 P99 ITL", ms(a.itl_p99_s)),
                ("P99 KV 传输", ms(a.transfer_p99_s) if c["layout"].endswith("D") else "（混合部署没有传输）")]
        self.table.value = rows_html(rows)
        chart = plots.Chart(1, width=420, height=230, title="满足两个 SLO 的请求比例")
        chart.add(0, c["layout"], RATES[c["name"]], a.curve, color="#1f77b4")
        chart.hline(0, "target", TARGET, color="#999999")
        chart.axes(0, xlabel="回放速率（req/s）", ylabel="比例", ylim=(0, 1.02))
        self.figure = chart
        self.chart.value = chart.svg()
        return a


def pd_panel() -> PDPanel:
    return PDPanel()
