"""Fit the step model's MoE expert-GEMM terms to measured grouped-GEMM (MoE) kernel timings.

    pip install aiconfigurator-core==0.12.0 pyarrow      # the measured tables, and a parquet reader
    python benchmarks/gpu/fit_moe_terms.py --write         # sim/presets/moe_kernels.py

Source: the TensorRT-LLM MoE kernel tables that ship in the Apache-2.0 wheel aiconfigurator-core
0.12.0 (``aiconfigurator_core/systems/data/<gpu>/moe/trtllm/<version>/moe_perf.parquet``: the whole
MoE layer, routed experts' gated MLP, per token count 1-16384, tp and ep, dtype and routing
distribution). Only the data is read (with pyarrow); no code of the package is imported.

For each model preset with routed experts (``sim.presets.models``), each GPU and dtype, over the
rows of that shape with expert parallelism 1 (the experts split by tensor parallelism, as the
presets serve them), tp 1-8 and m >= 8 tokens (every expert then receives tokens), the fit is the
dense GEMMs' form (``fit_kernel_terms.fit_gemm``, the roofline exponent p chosen among 0, 2, 4, 8):

    t(m) = || 2 m S / (peak e(S)), B / (hbm u) ||_p + c,    e(S) = e_inf S / (S + s_half)

with S = the active experts' parameters per GPU (top-k x one expert's), B = every expert's bytes
on one GPU. The table is the release the dense GEMM inputs come from (their ``gemm_version``). The timings used are those with routing imbalance: ``ROUTING`` = power_law_1.2, the
token-to-expert distribution aiconfigurator's generic MoE model assumes by default (its
sdk/models/moe.py): a few experts receive many more tokens than the mean, so the hot experts turn
compute-bound while the cold ones still stream their weights, and the layer runs slower than a
dense GEMM of the same FLOPs and bytes from about 200 to 2000 tokens per step. The balanced rows
are fitted too, for the record (``--balanced``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import fit_kernel_terms as dense                          # noqa: E402

from sim.presets.kernels import KERNELS                   # noqa: E402
from sim.presets.models import MODELS                     # noqa: E402

OUTPUT = ROOT / "sim" / "presets" / "moe_kernels.py"
ROUTING = "power_law_1.2"
DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
MAX_MEAN_ERR = 0.15          # a fit worse than this on average is left out (the dense terms then apply)
SOURCE = "aiconfigurator-core 0.12.0 (Apache-2.0), systems/data/<gpu>/moe/trtllm/<version>/moe_perf.parquet"


def shape_key(hidden: int, inter: int, experts: int, topk: int) -> str:
    return f"{hidden}x{inter}/e{experts}k{topk}"


def moe_shapes() -> dict:
    """shape key -> (hidden, intermediate, experts, top-k) of every routed-expert preset."""
    out = {}
    for m in MODELS.values():
        if m.experts:
            inter = m.moe_intermediate or m.intermediate
            out[shape_key(m.hidden, inter, m.experts, m.experts_per_token)] = (
                m.hidden, inter, m.experts, m.experts_per_token)
    return out


def read_table(path: Path) -> dict:
    import pyarrow.parquet as pq
    return pq.read_table(path).to_pydict()


def rows_for(table: dict, shape, routing: str, dtype: str, bytes_per_param: float) -> list[dict]:
    """fit_gemm's rows (one per tp): S, B and the measured curve of this shape, dtype and routing."""
    hidden, inter, experts, topk = shape
    curves: dict[int, dict[int, float]] = {}
    for i in range(len(table["latency"])):
        if (table["hidden_size"][i], table["inter_size"][i], table["num_experts"][i], table["topk"][i],
                table["moe_ep_size"][i], table["distribution"][i], table["moe_dtype"][i]) != \
                (hidden, inter, experts, topk, 1, routing, dtype):
            continue
        tp, m = table["moe_tp_size"][i], table["num_tokens"][i]
        if tp <= 8 and m >= 8:
            curves.setdefault(tp, {})[m] = min(curves.get(tp, {}).get(m, float("inf")), table["latency"][i])
    out = []
    for tp, curve in sorted(curves.items()):
        one = 3 * hidden * inter / tp                       # gate, up and down of one expert, per GPU
        ms = sorted(curve)
        out.append({"tp": tp, "params": topk * one, "bytes": experts * one * bytes_per_param, "m": ms,
                    "time_us": [curve[m] * 1e3 for m in ms]})       # the table's latency is in ms
    return out


def table_path(folder: Path, version: str | None) -> Path | None:
    """The MoE table of ``version`` (the one the dense GEMM inputs were taken from, so both fits
    describe the same TensorRT-LLM release), else None."""
    path = folder / str(version) / "moe_perf.parquet"
    return path if version and path.exists() else None


def fit_all(systems: Path, routing: str) -> dict:
    names = {v: k for k, v in dense.GPUS.items()}
    versions = {g: e.get("gemm_version") for g, e in json.loads(dense.INPUTS.read_text())["gpus"].items()}
    out = {}
    for gpu, k in KERNELS.items():
        path = table_path(systems / "data" / names[gpu] / "moe" / "trtllm", versions.get(gpu))
        if path is None:
            continue
        table = read_table(path)
        for shape_name, shape in moe_shapes().items():
            for aic_dtype, dtype in DTYPES.items():
                if dtype not in k["gemm"]:
                    continue
                rows = rows_for(table, shape, routing, aic_dtype, 1 if dtype == "fp8" else 2)
                if len(rows) < 2:
                    continue
                f = dense.fit_gemm(rows, k["peak"][dtype], k["hbm"])
                f["version"] = path.parent.name
                if f["mean_abs_err"] > MAX_MEAN_ERR:          # the form does not describe this table
                    print(f"{gpu} {dtype} {shape_name}: left out, mean |err| {f['mean_abs_err']:.0%}")
                    continue
                out.setdefault(gpu, {}).setdefault(dtype, {})[shape_name] = f
    return out


def render(fits: dict) -> str:
    lines = ['"""Per-GPU MoE expert-GEMM terms of the step model, fitted to measured MoE kernel timings.',
             "",
             "Generated by benchmarks/gpu/fit_moe_terms.py (routing: " + ROUTING + ") from",
             f"{SOURCE}; do not edit by hand. Keyed by GPU, dtype and expert shape",
             '(hidden x expert intermediate / experts, top-k); the form is sim.presets.kernels\' GEMM form."""',
             "", "MOE_KERNELS = {"]
    for gpu, by_dtype in fits.items():
        lines.append(f"    {gpu!r}: {{")
        for dtype, by_shape in by_dtype.items():
            lines.append(f"        {dtype!r}: {{")
            for shape, f in by_shape.items():
                lines.append(f"            {shape!r}: dict(e_inf={f['e_inf']:.4f}, s_half={f['s_half']:.4g}, "
                             f"u={f['u']:.4f}, c_s={f['c_s']:.4g}, p={f['p']}),  # {f['points']} points "
                             f"(TensorRT-LLM {f['version']}), mean |err| {f['mean_abs_err']:.1%}, "
                             f"max {f['max_abs_err']:.0%}")
            lines.append("        },")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", help="aiconfigurator_core/systems (default: the installed package's)")
    ap.add_argument("--balanced", action="store_true", help="fit the balanced-routing rows instead (not written)")
    ap.add_argument("--write", action="store_true", help="write sim/presets/moe_kernels.py")
    args = ap.parse_args(argv)
    if args.systems:
        systems = Path(args.systems)
    else:
        spec = importlib.util.find_spec("aiconfigurator_core")
        if spec is None:
            ap.error("aiconfigurator-core is not installed: pip install aiconfigurator-core==0.12.0, or --systems")
        systems = Path(spec.submodule_search_locations[0]) / "systems"
    fits = fit_all(systems, "balanced" if args.balanced else ROUTING)
    for gpu, by_dtype in fits.items():
        for dtype, by_shape in by_dtype.items():
            for shape, f in by_shape.items():
                print(f"{gpu:10} {dtype:5} {shape:22} p {f['p']} e_inf {f['e_inf']:.3f} s_half "
                      f"{f['s_half'] / 1e6:7.1f}M u {f['u']:.3f} c {f['c_s'] * 1e6:6.1f} us  "
                      f"mean |err| {f['mean_abs_err']:.1%} max {f['max_abs_err']:.0%}")
    if args.write and not args.balanced:
        OUTPUT.write_text(render(fits))
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
