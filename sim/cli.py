"""Command line: ``python -m sim plan ...``, ``python -m sim sweep ...`` and ``python -m sim fleet ...``.

    python -m sim plan --model llama-3-70b --gpu h100-sxm --tp 8 --dtype fp8 \\
        --qps 200 --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim sweep --model llama-3-70b --qps 200 --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim sweep ... --executor ray --address auto        # on a running Ray cluster
    python -m sim fleet --model llama-3-70b --gpu h100-sxm --tp 8 --dtype fp8 --qps 200 \\
        --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim calibrate runs/*.json --model llama-3-8b --gpu h100-sxm --out my.json   # then --profile my.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from sim import presets
from sim.executors import RayNotInstalled
from sim.planning import plan
from sim.sweep import DEFAULT_GRID, GPU_HOUR_USD, sweep, table


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, RayNotInstalled) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _plan(args) -> int:
    setup = presets.instance(args.model, args.gpu, tp=args.tp, weight_dtype=args.dtype,
                             kv_dtype=args.kv_dtype, mem_util=args.mem_util,
                             **{k: v for k, v in (("mfu", args.mfu), ("step_overhead", args.step_overhead),
                                                  ("bandwidth_util", args.bandwidth_util)) if v is not None},
                             profile=args.profile)
    price = args.gpu_hour_usd
    if price is None:
        price = GPU_HOUR_USD[presets._resolve("gpu", args.gpu, presets.GPUS)]
    calibrated = all(v is None for v in (args.mfu, args.step_overhead, args.bandwidth_util, args.profile))
    p = plan(args.qps, setup, args.input, args.output, args.ttft, args.tpot, gpus_per_instance=args.tp,
             headroom=args.headroom, gpu_hour_usd=price, search=args.search,
             uncertainty=presets.uncertainty(args.gpu, args.tp) if calibrated else None)
    if args.json:
        print(json.dumps({"model": args.model, "gpu": args.gpu, "tp": args.tp, "dtype": args.dtype, **p.as_dict()},
                         indent=2))
    else:
        print(f"{presets.model(args.model).name} on {args.tp} x {presets.gpu(args.gpu).name} ({args.dtype})")
        print(p)
    return 0


def _sweep(args) -> int:
    grid = {"gpu": args.gpus or DEFAULT_GRID["gpu"], "tp": args.tps, "weight_dtype": args.dtypes}
    if args.profile:                     # options other than the profile's deployment are refused with the reason
        grid["profile"] = [args.profile]
    bar = _ProgressBar(sys.stderr)
    rows = sweep(args.model, args.qps, args.input, args.output, args.ttft, args.tpot, grid=grid,
                 headroom=args.headroom, executor=args.executor, workers=args.workers,
                 address=args.address, progress=bar)
    bar.close()
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(table(rows, args.top))
    return 0


class _ProgressBar:
    """A one-line bar on stderr, shown only once the sweep has run for more than a second."""

    def __init__(self, stream, delay_s: float = 1.0):
        self.stream, self.delay_s, self.start, self.shown = stream, delay_s, time.monotonic(), False

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() - self.start < self.delay_s and not self.shown:
            return
        self.shown = True
        width = 30
        filled = width * done // total
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} options")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help=f"one of {', '.join(sorted(presets.MODELS))}")
    p.add_argument("--qps", type=float, required=True, help="peak requests per second to serve")
    p.add_argument("--input", type=int, required=True, help="prompt tokens per request")
    p.add_argument("--output", type=int, required=True, help="output tokens per request")
    p.add_argument("--ttft", type=float, required=True, help="p99 TTFT SLO, seconds")
    p.add_argument("--tpot", type=float, required=True, help="p99 TPOT SLO, seconds")
    p.add_argument("--headroom", type=float, default=1.3, help="spare capacity factor (default 1.3)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--profile", default=None, help="step-model terms from python -m sim calibrate (a JSON file)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sim", description="Size an LLM serving deployment.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="GPUs and cost for one deployment option")
    _common(p)
    p.add_argument("--gpu", required=True, help=f"one of {', '.join(sorted(presets.GPUS))}")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs per instance")
    p.add_argument("--dtype", default="bf16", choices=sorted(presets.DTYPE_BYTES), help="weight dtype")
    p.add_argument("--kv-dtype", default=None, choices=sorted(presets.DTYPE_BYTES), help="KV dtype (default: --dtype)")
    p.add_argument("--mem-util", type=float, default=0.9)
    p.add_argument("--mfu", type=float, default=None)
    p.add_argument("--bandwidth-util", type=float, default=None)
    p.add_argument("--step-overhead", type=float, default=None, help="seconds per step, TP communication included")
    p.add_argument("--gpu-hour-usd", type=float, default=None, help="price per GPU-hour (default: sim.sweep.GPU_HOUR_USD)")
    p.add_argument("--search", default="auto", choices=["auto", "chapter"])
    p.set_defaults(func=_plan)

    s = sub.add_parser("sweep", help="rank GPU types, TP and dtypes by cost")
    _common(s)
    s.add_argument("--gpus", nargs="+", default=None, help="GPU names (default: all)")
    s.add_argument("--tps", nargs="+", type=int, default=[1, 2, 4, 8])
    s.add_argument("--dtypes", nargs="+", default=["bf16", "fp8"], choices=sorted(presets.DTYPE_BYTES))
    s.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="where options run: local processes (default) or a Ray cluster")
    s.add_argument("--workers", type=int, default=None, help="local processes (default: CPU count)")
    s.add_argument("--address", default=None,
                   help="Ray cluster address for --executor ray, e.g. auto or ray://head:10001 "
                        "(default: start a local Ray runtime)")
    s.add_argument("--top", type=int, default=None, help="print only the cheapest N")
    s.set_defaults(func=_sweep)

    from sim.fleet.sizing import add_cli
    add_cli(sub, _common)
    from sim.calibrate import add_cli as add_calibrate
    add_calibrate(sub)
    return parser
