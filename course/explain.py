"""Back-of-envelope numbers behind the simulator's answers, and their explanation in Chinese.

Every figure here comes from the roofline in ``Setup.step_time`` with pencil-and-paper
simplifications, so a learner can check the simulator against a calculation they could do in an
interview:

* a decode step reads all weights once: ``weight_bytes / bandwidth + step_overhead`` is the lowest
  TPOT the instance can reach (the KV cache it also reads adds a little);
* a prompt costs ``2 * params * input_len`` FLOPs at ``mfu`` of peak, in chunks of at most
  ``max_num_batched_tokens`` tokens, each chunk one step with its own overhead: that is the lowest
  TTFT;
* at high load every token (prompt or output) costs ``2 * params`` FLOPs, so the instance cannot
  finish more than ``peak_flops * mfu / (2 * params * (input_len + output_len))`` requests a second;
  the latency curve bends up (its knee) as the offered rate approaches that ceiling;
* a pure decode step of B requests, each over ``context`` cached tokens, computes B tokens and reads
  the weights plus B x context tokens of KV: it turns compute bound at the smallest B where the
  matmul term of ``Setup.roofline_terms`` reaches the read term (``decode_crossover``). The KV read
  grows with B too, so the crossover sits well above weight-read time x FLOP/s / (2 x params).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from sim.setup import Setup


@dataclass(frozen=True)
class Estimate:
    """Roofline estimates for one instance and one request shape (seconds, req/s, bytes)."""

    weight_read_s: float          # reading every weight once: weight_bytes / bandwidth
    tpot_floor_s: float           # weight_read_s + step_overhead: the lowest possible TPOT
    prefill_flops: float          # 2 * params * input_len
    prefill_chunks: int           # steps the prompt takes: ceil(input_len / max_num_batched_tokens)
    ttft_floor_s: float           # prefill_flops / (peak_flops * mfu) + chunks * step_overhead
    request_flops: float          # 2 * params * (input_len + output_len)
    compute_rate: float           # peak_flops * mfu / request_flops: the compute ceiling, req/s
    tokens_per_s: float           # peak_flops * mfu / (2 * params): tokens/s at full compute
    kv_bytes_per_request: float   # kv_bytes_per_token * (input_len + output_len)
    kv_requests: int              # requests whose whole reservation fits in the KV cache at once
    decode_context: float         # tokens each decoder has cached, on average: input_len + output_len / 2
    decode_batch_compute_bound: float  # fewest decoders (at decode_context) whose step is compute bound

    def as_dict(self) -> dict:
        return asdict(self)


def estimate(setup: Setup, input_len: int, output_len: int) -> Estimate:
    """The roofline numbers for ``input_len``-token prompts and ``output_len``-token answers."""
    flops = setup.peak_flops * setup.mfu
    weight_read = setup.weight_bytes / setup.bandwidth
    chunks = math.ceil(input_len / setup.max_num_batched_tokens)
    prefill_flops = 2 * setup.params * input_len
    request_flops = 2 * setup.params * (input_len + output_len)
    return Estimate(
        weight_read_s=weight_read,
        tpot_floor_s=weight_read + setup.step_overhead,
        prefill_flops=prefill_flops,
        prefill_chunks=chunks,
        ttft_floor_s=prefill_flops / flops + chunks * setup.step_overhead,
        request_flops=request_flops,
        compute_rate=flops / request_flops,
        tokens_per_s=flops / (2 * setup.params),
        kv_bytes_per_request=setup.kv_bytes_per_token * (input_len + output_len),
        kv_requests=setup.kv_capacity_tokens // (input_len + output_len),
        decode_context=input_len + output_len / 2,
        decode_batch_compute_bound=decode_crossover(setup, input_len + output_len / 2),
    )


def decode_crossover(setup: Setup, context: float, limit: int = 1 << 24) -> float:
    """The fewest decoders, each over ``context`` cached tokens, whose pure decode step is compute
    bound: the smallest B with matmul time >= the read time (weights + B x context tokens of KV) in
    ``Setup.roofline_terms``, the terms ``Setup.step_time`` takes the larger of. ``inf`` when even
    ``limit`` decoders stay memory bound (the KV read per decoder outgrows its FLOPs)."""
    def compute_bound(b: int) -> bool:
        compute, memory, _ = setup.roofline_terms(b, b * context)
        return compute >= memory
    if not compute_bound(limit):
        return math.inf
    lo, hi = 0, limit                  # compute_bound(hi) holds; both terms are linear in b
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return float(hi)


BOUND_ZH = {
    "prefill_compute": "算力（prefill 与 decode 共用的矩阵乘算力，提示词占大头）",
    "decode_bandwidth": "显存带宽（decode 每步都要读一遍权重与 KV）",
    "kv_capacity": "KV Cache 容量（同时在跑的请求数被显存卡住）",
    "max_num_seqs": "并发上限 max_num_seqs",
    "ttft": "TTFT SLO（提示词很长，单个请求的 prefill 就占去 SLO 的一大块）",
    "infeasible": "无解：即使只有一个请求也满足不了 SLO",
}


def fmt_rate(rate: float) -> str:
    """A rate in req/s the way the panel prints it: one decimal from 10 up, else 3 significant digits."""
    return f"{rate:.1f}" if rate >= 10 else f"{rate:.3g}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def explain_zh(setup: Setup, input_len: int, output_len: int, *, low_load_ttft_s: float,
               low_load_tpot_s: float, rate_per_instance: float, bound: str,
               ttft_slo: float = 2.0, tpot_slo: float = 0.05) -> list[str]:
    """Chinese sentences (HTML-safe, no markup) that derive the panel's numbers by hand."""
    e = estimate(setup, input_len, output_len)
    lines = [
        f"TPOT 下限：每个 decode 步都要把 {setup.weight_bytes / 1e9:.1f} GB 权重从显存读一遍，"
        f"{setup.weight_bytes / 1e9:.1f} GB ÷ {setup.bandwidth / 1e12:.1f} TB/s = {_ms(e.weight_read_s)}，"
        f"加每步固定开销 {_ms(setup.step_overhead)} ≈ {_ms(e.tpot_floor_s)}；"
        f"模拟得到 {_ms(low_load_tpot_s)}，多出来的是同时在读的 KV Cache 和偶尔插进来的 prefill 步。",
        f"TTFT 下限：提示词 {input_len} token 的 prefill 需要 2 × {setup.params / 1e9:.1f}e9 × {input_len} "
        f"= {e.prefill_flops:.3g} FLOPs，按 {setup.peak_flops / 1e15:.2f} PFLOP/s × MFU {setup.mfu:.2f} 算要 "
        f"{_ms(e.prefill_flops / (setup.peak_flops * setup.mfu))}，分 {e.prefill_chunks} 步、每步加 "
        f"{_ms(setup.step_overhead)} ≈ {_ms(e.ttft_floor_s)}；模拟得到 {_ms(low_load_ttft_s)}"
        f"（还要等正在跑的那一步结束）。",
        f"拐点：每个请求总共要算 {input_len + output_len} 个 token，每 token 2 × 参数量 FLOPs，"
        f"整机每秒最多算 {e.tokens_per_s:,.0f} token，即最多 {fmt_rate(e.compute_rate)} req/s。"
        f"负载逼近这个上限时排队时间急剧增长，这就是延迟曲线的拐点。",
    ]
    if bound == "infeasible" or rate_per_instance <= 0:
        over = []
        if low_load_ttft_s > ttft_slo:
            over.append(f"TTFT {_ms(low_load_ttft_s)} > {ttft_slo:g} s")
        if low_load_tpot_s > tpot_slo:
            over.append(f"TPOT {_ms(low_load_tpot_s)} > {tpot_slo * 1e3:g} ms")
        what = "、".join(over) if over else "单个请求能达标，但稍有排队就有超过 1% 的请求超标"
        lines.append(f"当前参数下单实例无解（{what}）：这是单个请求的延迟下限，加实例也没用。"
                     f"只能换更快的硬件、提高 MFU、把长请求放进更大 TP 的专用池，或放宽 SLO。")
    else:
        ratio = rate_per_instance / e.compute_rate
        if ratio <= 1:
            lines.append(f"满足 SLO 的最大速率 {fmt_rate(rate_per_instance)} req/s，是算力上限的 {ratio:.0%}；"
                         f"瓶颈：{BOUND_ZH.get(bound, bound)}。")
        else:
            lines.append(f"满足 SLO 的最大速率 {fmt_rate(rate_per_instance)} req/s，反而略高于稳态算力上限"
                         f"（{ratio:.0%}）：压测只有 1500 个请求，过载时队列还没来得及堆起来就结束了。"
                         f"真实压测要跑得足够久；瓶颈：{BOUND_ZH.get(bound, bound)}。")
        prefill = e.ttft_floor_s
        if ratio < 0.6 and output_len > 1 and prefill / (output_len - 1) + e.tpot_floor_s > tpot_slo / 2:
            lines.append(f"速率远低于算力上限，原因在 prefill 干扰 decode：别的请求一次 prefill 要 {_ms(prefill)}，"
                         f"而一个请求只有 {output_len - 1} 个 token 间隔来摊薄它，碰上一两次平均 TPOT 就超标。"
                         f"长提示词应进单独的资源池，或考虑 PD 分离。")
        if ratio < 0.6 and prefill > ttft_slo / 4:
            lines.append(f"速率远低于算力上限，原因在 TTFT：一次 prefill 就要 {_ms(prefill)}，{ttft_slo:g} s 的 SLO "
                         f"只容得下前面再排 {max(0, int(ttft_slo / prefill) - 1)} 个这样的请求，实例只能在低利用率下运行。"
                         f"用更大的 TP 或上下文并行缩短单次 prefill，才能把利用率提上去。")
    return lines


@dataclass(frozen=True)
class LittleCheck:
    """Little's law on a run, over a window of its time: L (measured) against lambda x W."""

    window: tuple                 # (start, end) seconds
    mean_in_system: float         # time average of requests in the system over the window (L)
    arrival_rate: float           # arrivals in the window per second (lambda)
    mean_latency_s: float         # mean end-to-end latency of the requests arriving in it (W)
    times: object                 # event times in the window (for plotting), seconds
    in_system: object             # requests in the system just after each event

    @property
    def predicted(self) -> float:
        return self.arrival_rate * self.mean_latency_s


def littles_law(result, window=(0.1, 0.9)) -> LittleCheck:
    """Measure L = time-averaged requests in the system (arrived, not finished) over a window given
    as fractions of the run, and lambda, W from the requests arriving in it; L should equal lambda x W
    (up to edge effects, small when the window is long against one latency)."""
    import numpy as np

    arrival, finish = np.asarray(result.arrival, float), np.asarray(result.finish, float)
    t0, t1 = float(arrival.min()), float(finish.max())
    a, b = t0 + window[0] * (t1 - t0), t0 + window[1] * (t1 - t0)
    times = np.concatenate((arrival, finish))
    delta = np.concatenate((np.ones(len(arrival)), -np.ones(len(finish))))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(delta[order])
    inside = (times > a) & (times < b)
    # N(t) is piecewise constant: level[i] holds on [times[i], times[i+1]).
    before = np.searchsorted(times, a, side="right")
    start_level = level[before - 1] if before > 0 else 0.0
    t = np.concatenate(([a], times[inside], [b]))
    n = np.concatenate(([start_level], level[inside]))
    mean_in_system = float((n * np.diff(t)).sum() / (b - a))
    arrived = (arrival >= a) & (arrival < b)
    return LittleCheck((a, b), mean_in_system, float(arrived.sum()) / (b - a),
                       float((finish[arrived] - arrival[arrived]).mean()), t[:-1], n)


def busy_fraction(result) -> float:
    """What nvidia-smi's utilisation counts, for one instance's run: the time some step is running
    over the run's time (first arrival to last finish). Continuous batching issues a step whenever
    a request is running, so this stays near 1 well below the load the SLOs allow."""
    span = float(result.finish.max() - result.arrival.min())
    return float(result.steps.duration.sum()) / span if span > 0 else 0.0
