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
  the latency curve bends up (its knee) as the offered rate approaches that ceiling.
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
    decode_batch_compute_bound: float  # decoders above which a pure decode step is compute bound

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
        decode_batch_compute_bound=weight_read * flops / (2 * setup.params),
    )


BOUND_ZH = {
    "prefill_compute": "算力（prefill 与 decode 共用的矩阵乘算力，提示词占大头）",
    "decode_bandwidth": "显存带宽（decode 每步都要读一遍权重与 KV）",
    "kv_capacity": "KV Cache 容量（同时在跑的请求数被显存卡住）",
    "max_num_seqs": "并发上限 max_num_seqs",
    "infeasible": "无解：即使只有一个请求也满足不了 SLO",
}


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
        f"整机每秒最多算 {e.tokens_per_s:,.0f} token，即最多 {e.compute_rate:.1f} req/s。"
        f"负载逼近这个上限时排队时间急剧增长，这就是延迟曲线的拐点。",
    ]
    if bound == "infeasible" or rate_per_instance <= 0:
        lines.append(f"当前参数下 TTFT 下限 {_ms(e.ttft_floor_s)} 或 TPOT 下限 {_ms(e.tpot_floor_s)} "
                     f"已超过 SLO（TTFT {ttft_slo:g} s、TPOT {tpot_slo * 1e3:g} ms），加机器也没用，"
                     f"只能换更快的硬件、提高 MFU、把长请求放到更大 TP 的专用池，或放宽 SLO。")
    else:
        lines.append(f"满足 SLO 的最大速率 {rate_per_instance:.1f} req/s，是算力上限的 "
                     f"{rate_per_instance / e.compute_rate:.0%}；瓶颈：{BOUND_ZH.get(bound, bound)}。")
    return lines
