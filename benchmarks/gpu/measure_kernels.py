"""Measure the efficiency factors the presets assume, on a real GPU (needs torch + CUDA).

    python benchmarks/gpu/measure_kernels.py --out results.json

Times the pieces of a Llama-3-70B-shaped layer (hidden 8192, 64 query heads, 8 KV heads of 128,
MLP 28672) with random weights: large GEMMs in BF16 and FP8 (prefill), skinny GEMMs (decode, bound
by reading the weights), causal attention (prefill) and attention over a KV cache (decode), and a
whole decoder layer stack. Prints each as a fraction of the datasheet peak it is bounded by.
The course itself never needs a GPU: these figures are recorded in sim/presets with their date.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, MLP = 8192, 64, 8, 128, 28672
DEV = "cuda"


def timed(fn, iters=20, warmup=5) -> float:
    """Mean seconds per call, by CUDA events around `iters` calls after `warmup`."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters / 1e3


def graphed(fn, iters=20) -> float:
    """Like timed(), but replaying a CUDA graph of fn (no launch overhead), as serving engines do."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return timed(g.replay, iters=iters, warmup=3)


def copy_bandwidth() -> float:
    x = torch.empty(2 * 1024**3, dtype=torch.uint8, device=DEV)
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), iters=10)
    return 2 * x.numel() / t


def gemm_bf16(rows: list[int]) -> list[dict]:
    w = torch.randn(MLP, HIDDEN, device=DEV, dtype=torch.bfloat16) * 0.02
    out = []
    for m in rows:
        x = torch.randn(m, HIDDEN, device=DEV, dtype=torch.bfloat16)
        t = timed(lambda: x @ w.t())
        flops = 2 * m * HIDDEN * MLP
        out.append({"m": m, "s": t, "tflops": flops / t / 1e12, "weight_gbs": w.numel() * 2 / t / 1e9})
    return out


def gemm_fp8(rows: list[int]) -> list[dict]:
    w = (torch.randn(MLP, HIDDEN, device=DEV) * 0.02).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=DEV)
    out = []
    for m in rows:
        x = torch.randn(m, HIDDEN, device=DEV).to(torch.float8_e4m3fn)
        fn = lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        t = timed(fn)
        flops = 2 * m * HIDDEN * MLP
        out.append({"m": m, "s": t, "tflops": flops / t / 1e12, "weight_gbs": w.numel() / t / 1e9})
    return out


def attention_prefill(lengths: list[int]) -> list[dict]:
    out = []
    for s in lengths:
        q = torch.randn(1, HEADS, s, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        k = torch.randn(1, KV_HEADS, s, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        t = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), iters=10)
        flops = 4 * HEADS * HEAD_DIM * s * s / 2           # QK^T and PV, causal half
        out.append({"seq": s, "s": t, "tflops": flops / t / 1e12})
    return out


def attention_decode(cases: list[tuple[int, int]]) -> list[dict]:
    out = []
    for batch, ctx in cases:
        q = torch.randn(batch, HEADS, 1, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        k = torch.randn(batch, KV_HEADS, ctx, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        t = timed(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        kv_bytes = 2 * k.numel() * 2
        out.append({"batch": batch, "ctx": ctx, "s": t, "kv_gbs": kv_bytes / t / 1e9})
    return out


class Layer(torch.nn.Module):
    """One Llama-style decoder layer, BF16, written out plainly (no fused kernels beyond SDPA)."""

    def __init__(self):
        super().__init__()
        mk = lambda o, i: torch.nn.Parameter(torch.randn(o, i, device=DEV, dtype=torch.bfloat16) * 0.02)
        self.qkv = mk((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN)
        self.o = mk(HIDDEN, HEADS * HEAD_DIM)
        self.gate_up = mk(2 * MLP, HIDDEN)
        self.down = mk(HIDDEN, MLP)
        self.n1 = torch.nn.Parameter(torch.ones(HIDDEN, device=DEV, dtype=torch.bfloat16))
        self.n2 = torch.nn.Parameter(torch.ones(HIDDEN, device=DEV, dtype=torch.bfloat16))

    def forward(self, x, k_cache, v_cache, pos: int):
        """x: (batch, new tokens, hidden); the caches hold `pos` earlier tokens and room for these."""
        b, s, _ = x.shape
        h = F.rms_norm(x, (HIDDEN,), self.n1)
        qkv = h @ self.qkv.t()
        q, k, v = qkv.split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
        q = q.view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
        k_cache[:, :, pos:pos + s] = k.view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)   # written in place,
        v_cache[:, :, pos:pos + s] = v.view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)   # as a paged cache is
        a = F.scaled_dot_product_attention(q, k_cache[:, :, :pos + s], v_cache[:, :, :pos + s],
                                           is_causal=(pos == 0 and s > 1), enable_gqa=True)
        x = x + a.transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM) @ self.o.t()
        g, u = (F.rms_norm(x, (HIDDEN,), self.n2) @ self.gate_up.t()).chunk(2, dim=-1)
        return x + (F.silu(g) * u) @ self.down.t()


def layer_steps(n_layers: int, decode_cases, prefill_tokens) -> dict:
    layers = [Layer() for _ in range(n_layers)]
    weight_bytes = sum(p.numel() * 2 for l in layers for p in l.parameters())
    flops_per_token = 2 * sum(p.numel() for l in layers for p in l.parameters() if p.dim() == 2)
    res = {"layers": n_layers, "weight_bytes": weight_bytes, "decode": [], "prefill": []}
    with torch.no_grad():
        for batch, ctx in decode_cases:
            x = torch.randn(batch, 1, HIDDEN, device=DEV, dtype=torch.bfloat16)
            kc = torch.randn(batch, KV_HEADS, ctx + 1, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
            vc = torch.randn_like(kc)

            def step():
                h = x
                for l in layers:
                    h = l(h, kc, vc, ctx)
                return h
            eager = timed(step, iters=10)
            graph = graphed(step, iters=10)
            kv_bytes = 2 * (kc.numel() * ctx // (ctx + 1)) * 2 * n_layers
            roofline = (weight_bytes + kv_bytes) / 4.8e12
            res["decode"].append({"batch": batch, "ctx": ctx, "eager_s": eager, "graph_s": graph,
                                  "bytes": weight_bytes + kv_bytes, "roofline_4p8_s": roofline,
                                  "graph_gbs": (weight_bytes + kv_bytes) / graph / 1e9})
        for tokens in prefill_tokens:
            x = torch.randn(1, tokens, HIDDEN, device=DEV, dtype=torch.bfloat16)
            kc = torch.empty(1, KV_HEADS, tokens, HEAD_DIM, device=DEV, dtype=torch.bfloat16)
            vc = torch.empty_like(kc)

            def pre():
                h = x
                for l in layers:
                    h = l(h, kc, vc, 0)
                return h
            t = timed(pre, iters=5, warmup=2)
            attn = 4 * HEADS * HEAD_DIM * tokens * tokens / 2 * n_layers
            res["prefill"].append({"tokens": tokens, "s": t, "linear_tflops": flops_per_token * tokens / t / 1e12,
                                   "total_tflops": (flops_per_token * tokens + attn) / t / 1e12})
    return res


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="kernels.json")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.time()
    props = torch.cuda.get_device_properties(0)
    report = {"device": props.name, "torch": torch.__version__, "sms": props.multi_processor_count,
              "date": time.strftime("%Y-%m-%d")}
    sections = [
        ("copy_bytes_per_s", copy_bandwidth),
        ("gemm_bf16", lambda: gemm_bf16([1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192])),
        ("gemm_fp8", lambda: gemm_fp8([1, 8, 64, 256, 1024, 4096, 8192])),
        ("attention_prefill", lambda: attention_prefill([1024, 4096, 16384])),
        ("attention_decode", lambda: attention_decode([(1, 2048), (32, 2048), (128, 2048), (64, 8192)])),
        ("layers", lambda: layer_steps(8, [(1, 2048), (16, 2048), (64, 2048), (256, 2048)], [512, 2048, 8192])),
    ]
    for name, fn in sections:
        try:
            report[name] = fn()
        except Exception as e:                                  # keep the other sections
            report[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"[{time.time() - t0:6.1f} s] {name}: {json.dumps(report[name])[:600]}", flush=True)
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
