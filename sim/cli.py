"""Command line: ``python -m sim plan ...``, ``python -m sim sweep ...`` and ``python -m sim fleet ...``.

    python -m sim plan --model llama-3-70b --gpu h100-sxm --tp 8 --dtype fp8 \\
        --qps 200 --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim sweep --model llama-3-70b --qps 200 --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim sweep ... --executor ray --address auto        # on a running Ray cluster
    python -m sim fleet --model llama-3-70b --gpu h100-sxm --tp 8 --dtype fp8 --qps 200 \\
        --input 2000 --output 500 --ttft 2 --tpot 0.05
    python -m sim calibrate runs/*.json --model llama-3-8b --gpu h100-sxm --out my.json   # then --profile my.json

The three commands take the instance the same way (``instance_flags``: one set of flags, one
``setup_from_args``, one price lookup ``presets.gpu_hour_usd``) and name it the same way
(``presets.describe``: the presets' display names in text, their keys in JSON). ``fleet`` and
``sweep`` show progress on stderr when it is a terminal (``--progress``, see ``sim.progress``).
"""

from __future__ import annotations

import argparse
import json
import sys

from sim import presets
from sim.executors import RayNotInstalled
from sim.kv import ENGINE_ADMISSION
from sim.planning import plan
from sim.progress import MODES, progress_bar, progress_flag
from sim.setup import Setup

FACTORS = ("kv_dtype", "mem_util", "mfu", "bandwidth_util", "step_overhead", "profile", "engine")   # presets.instance keywords


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, RayNotInstalled) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


# --- the instance: one set of flags, one Setup, one price, one name ----------------------------

def instance_keywords(args) -> dict:
    """The ``presets.instance`` keywords given on the command line, besides model, GPU, TP and the
    weight dtype (what ``sweep`` keeps fixed over its grid)."""
    return {k: getattr(args, k) for k in FACTORS if getattr(args, k, None) is not None}


def setup_from_args(args) -> Setup:
    """The ``Setup`` of ``--model --gpu --tp --dtype`` and the factor flags (``presets.instance``:
    calibrated unless ``--step-overhead`` is given)."""
    return presets.instance(args.model, args.gpu, tp=args.tp, weight_dtype=args.dtype, **instance_keywords(args))


def price_from_args(args) -> float:
    """``--gpu-hour-usd``, else the GPU's list price (``presets.gpu_hour_usd``; a GPU without one is
    an error asking for the flag)."""
    return args.gpu_hour_usd if args.gpu_hour_usd is not None else presets.gpu_hour_usd(args.gpu)


def describe_args(args) -> str:
    return presets.describe(args.model, args.gpu, args.tp, args.dtype, args.kv_dtype)


def names_from_args(args) -> dict:
    """The instance as JSON names it: preset keys (aliases resolved) and the display line."""
    kv = args.dtype if args.kv_dtype is None else args.kv_dtype
    return {"model": presets.model_key(args.model), "gpu": presets.gpu_key(args.gpu), "tp": args.tp,
            "dtype": args.dtype, "kv_dtype": kv, "instance": describe_args(args)}


# --- the commands ------------------------------------------------------------------------------

def _plan(args) -> int:
    setup = setup_from_args(args)
    calibrated = all(getattr(args, k) is None for k in ("mfu", "step_overhead", "bandwidth_util", "profile"))
    p = plan(args.qps, setup, args.input, args.output, args.ttft, args.tpot, gpus_per_instance=args.tp,
             headroom=args.headroom, gpu_hour_usd=price_from_args(args), search=args.search,
             uncertainty=presets.uncertainty(args.gpu, args.tp) if calibrated else None)
    if args.json:
        print(json.dumps({**names_from_args(args), **p.as_dict()}, indent=2))
    else:
        print(describe_args(args))
        print(p)
    return 0


def _sweep(args) -> int:
    from sim.sweep import DEFAULT_GRID, sweep, table

    grid = {"gpu": args.gpus or DEFAULT_GRID["gpu"], "tp": args.tps, "weight_dtype": args.dtypes,
            **instance_keywords(args)}
    prices = _prices(args.gpu_hour_usd)
    with progress_bar("options planned", enabled=MODES[args.progress]) as bar:
        rows = sweep(args.model, args.qps, args.input, args.output, args.ttft, args.tpot, grid=grid,
                     gpu_hour_usd=prices, headroom=args.headroom, executor=args.executor, workers=args.workers,
                     address=args.address, progress=bar)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(f"{presets.model(args.model).name}: {len(rows)} options for {args.qps:g} req/s, "
              f"{args.input} in / {args.output} out tokens, p99 TTFT <= {args.ttft:g} s, "
              f"p99 TPOT <= {args.tpot * 1e3:g} ms; cheapest first")
        print(table(rows, args.top))
    return 0


def _prices(items) -> dict | None:
    """``--gpu-hour-usd gh200=4 b200=6`` (sweep) as {GPU name: price}."""
    if not items:
        return None
    prices = {}
    for item in items:
        name, sep, price = item.partition("=")
        try:
            prices[name] = float(price) if sep and name else None
        except ValueError:
            prices[name] = None
        if prices[name] is None:
            raise ValueError(f"--gpu-hour-usd takes GPU=USD items (e.g. gh200=4.0), got {item!r}")
    return prices


def _fleet(args) -> int:
    from sim.fleet.sizing import size_fleet

    with progress_bar("fleets simulated", enabled=MODES[args.progress]) as bar:
        result = size_fleet(args.qps, setup_from_args(args), args.input, args.output, args.ttft, args.tpot,
                            gpus_per_instance=args.tp, gpu_hour_usd=price_from_args(args),
                            duration_s=args.duration, router=args.router, link_gbs=args.link_gbs,
                            link_latency_s=args.link_latency, progress=bar)
    if args.json:
        print(json.dumps({**names_from_args(args), "router": args.router, **result.as_dict()}, indent=2))
    else:
        print(f"{describe_args(args)}, router {args.router}, {args.duration:g} s of traffic per fleet")
        print(result)
    return 0


# --- flags -------------------------------------------------------------------------------------

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


def factor_flags(p: argparse.ArgumentParser) -> None:
    """The instance flags every command takes (``instance_keywords`` reads them back)."""
    dtypes = sorted(presets.DTYPE_BYTES)
    p.add_argument("--kv-dtype", default=None, choices=dtypes, help="KV dtype (default: the weight dtype)")
    p.add_argument("--mem-util", type=float, default=None, help="fraction of GPU memory used (default 0.9)")
    p.add_argument("--mfu", type=float, default=None, help="matmul efficiency (default: calibrated)")
    p.add_argument("--bandwidth-util", type=float, default=None, help="HBM efficiency (default: calibrated)")
    p.add_argument("--step-overhead", type=float, default=None,
                   help="seconds per step, TP communication included: the handbook's step rule "
                        "(default: the calibrated one)")
    p.add_argument("--engine", default=None, choices=sorted(ENGINE_ADMISSION),
                   help="admission at saturation as that engine does it (sim.kv.admission_policy; "
                        "default: the handbook's whole reservation)")


def instance_flags(p: argparse.ArgumentParser) -> None:
    """One instance: ``plan`` and ``fleet`` (``setup_from_args`` and ``price_from_args`` read them)."""
    p.add_argument("--gpu", required=True, help=f"one of {', '.join(sorted(presets.GPUS))}")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs per instance")
    p.add_argument("--dtype", default="bf16", choices=sorted(presets.DTYPE_BYTES), help="weight dtype")
    factor_flags(p)
    p.add_argument("--gpu-hour-usd", type=float, default=None,
                   help="price per GPU-hour (default: sim.presets.GPU_HOUR_USD)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sim", description="Size an LLM serving deployment.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="GPUs and cost for one deployment option")
    _common(p)
    instance_flags(p)
    p.add_argument("--search", default="auto", choices=["auto", "chapter"],
                   help="the rate search: auto (to 0.1%%, the default) or the handbook's 12 halvings of [1, 60]")
    p.set_defaults(func=_plan)

    s = sub.add_parser("sweep", help="rank GPU types, TP and dtypes by cost")
    _common(s)
    s.add_argument("--gpus", nargs="+", default=None, help="GPU names (default: all)")
    s.add_argument("--tps", nargs="+", type=int, default=[1, 2, 4, 8])
    s.add_argument("--dtypes", nargs="+", default=["bf16", "fp8"], choices=sorted(presets.DTYPE_BYTES))
    factor_flags(s)
    s.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="where options run: local processes (default) or a Ray cluster")
    s.add_argument("--workers", type=int, default=None, help="local processes (default: CPU count)")
    s.add_argument("--address", default=None,
                   help="Ray cluster address for --executor ray, e.g. auto or ray://head:10001 "
                        "(default: start a local Ray runtime)")
    s.add_argument("--gpu-hour-usd", nargs="+", default=None, metavar="GPU=USD",
                   help="prices per GPU-hour replacing or adding to sim.presets.GPU_HOUR_USD, e.g. gh200=4")
    s.add_argument("--top", type=int, default=None, help="print only the cheapest N")
    progress_flag(s)
    s.set_defaults(func=_sweep)

    f = sub.add_parser("fleet", help="cheapest colocated and PD fleets, verified by simulation")
    _common(f)
    instance_flags(f)
    f.add_argument("--router", default="least_requests", help="fleet router (see sim.fleet.ROUTERS)")
    f.add_argument("--duration", type=float, default=120.0, help="seconds of traffic per simulated fleet")
    f.add_argument("--link-gbs", type=float, default=50.0, help="KV link, GB/s (PD)")
    f.add_argument("--link-latency", type=float, default=1e-3, help="KV link latency, seconds (PD)")
    progress_flag(f)
    f.set_defaults(func=_fleet)
    from sim.calibrate import add_cli as add_calibrate
    add_calibrate(sub)
    return parser
