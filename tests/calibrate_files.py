"""Benchmark result files in ``vllm bench serve --save-result``'s schema, made by the simulator itself
(for tests/test_calibrate.py): a run of a known Setup written as vLLM would have saved it."""

import json

import numpy as np

from sim import run, workload


def vllm_result(setup, load: dict, input_len, output_len, num_requests: int, *, detailed: bool, seed: int = 0) -> dict:
    """The JSON ``vllm bench serve`` saves for ``load`` ({"request_rate": r} or {"max_concurrency": c}
    or {} for all at once) on ``setup``: the summary, plus the per-request arrays when ``detailed``."""
    rate, conc = load.get("request_rate"), load.get("max_concurrency")
    if rate is not None:
        w = workload.poisson(rate, num_requests, input_len, output_len, seed)
    elif conc is not None:
        w = workload.closed_loop(conc, num_requests, input_len, output_len, seed=seed)
    else:
        w = workload.offline(num_requests, input_len, output_len, seed)
    res = run(setup, w)
    ttft, out = res.ttft, res.output_len
    latency = res.finish - res.arrival
    tpot = ((latency - ttft) / np.maximum(out - 1, 1))[out > 1]
    duration = float(res.finish.max() - res.arrival.min())
    data = {"date": "20250101-000000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
            "model_id": "synthetic", "tokenizer_id": "synthetic", "num_prompts": num_requests,
            "request_rate": rate if rate is not None else "inf", "burstiness": 1.0, "max_concurrency": conc,
            "duration": duration, "completed": len(res), "failed": 0,
            "total_input_tokens": int(res.input_len.sum()), "total_output_tokens": int(out.sum()),
            "request_throughput": len(res) / duration, "request_goodput": None,
            "output_throughput": float(out.sum()) / duration,
            "total_token_throughput": float(out.sum() + res.input_len.sum()) / duration,
            "latencies": latency.tolist(), "queue_times": [0.0] * len(res),
            "max_output_tokens_per_s": 0.0, "max_concurrent_requests": conc or 0, "rtfx": 0.0}
    for name, v in (("ttft", ttft), ("tpot", tpot), ("itl", tpot), ("e2el", latency)):
        data[f"mean_{name}_ms"] = float(np.mean(v)) * 1e3
        data[f"median_{name}_ms"] = float(np.median(v)) * 1e3
        data[f"std_{name}_ms"] = float(np.std(v)) * 1e3
        data[f"p99_{name}_ms"] = float(np.percentile(v, 99)) * 1e3
    if detailed:
        gaps = [[float(g)] * (int(o) - 1) for g, o in zip((latency - ttft) / np.maximum(out - 1, 1), out)]
        data.update(input_lens=res.input_len.tolist(), output_lens=out.tolist(), ttfts=ttft.tolist(), itls=gaps,
                    start_times=(1000.0 + res.arrival).tolist(), generated_texts=[""] * len(res),
                    errors=[""] * len(res))
    return data


def write(path, data: dict):
    path.write_text(json.dumps(data))
    return path
