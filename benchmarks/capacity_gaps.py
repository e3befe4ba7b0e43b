"""Where the capacity-at-the-SLO slice is still off, measured from the stored figures (no fit).

    .venv/bin/python benchmarks/capacity_gaps.py

Prints four tables that tests/validation/README.md ("What the capacity slice still misses") quotes:

1. Little's law on each MLPerf server run with published mean latencies: the sequences in flight
   per instance at the published rate, rate x (mean TTFT + (mean output - 1) x mean TPOT), as the
   run measured them and as the simulator predicted them at the same rate (``report.json``). A
   real engine holding several times the simulator's batch at the same throughput runs slower
   steps at that batch than the step model does.
2. Server over offline: for each MLPerf system with both a server (or interactive) and an
   offline throughput row, the server result as a share of the offline one, published and
   simulated (``report.json``). The real engines give up 1-26% of their offline throughput to meet
   the server limits; the simulator's capacity sits at its own offline figure or above it (its
   knee is sharper: p99 TPOT stays far under the limit until the queue runs away).
3. What bound each published server run: its p99 TTFT and p99 TPOT as shares of the
   scenario's limits, as the run measured them and as the simulator predicted them at the same
   rate (``report.json``), beside the capacity row's error. Most 70B runs sit at 0.88-1.00 of the
   TPOT limit (TPOT-bound: the engine's batch, and so its step, grew until TPOT met the limit),
   where the simulator at the same rate is at 0.20-0.56 of it (mostly a third or less). Runs
   without both published p99s are listed as left out.
4. The line ``alpha + bytes / beta`` that the presets timed every all-reduce with until 2026-12-03
   (``sim.presets.kernels``' fit, still what ``efficiency.terms`` reports), against the measured
   custom all-reduce table it was fitted to (``benchmarks/gpu/kernel_inputs.json``, interpolated
   log-log) at the message sizes decode batches and prefill chunks produce: why the presets now
   read the table itself at each step's size (``Setup.comm_curve``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fidelity as F                                       # noqa: E402
from sim.presets.kernels import KERNELS                    # noqa: E402

KERNEL_INPUTS = F.ROOT / "benchmarks" / "gpu" / "kernel_inputs.json"
MESSAGE_MIB = (1, 2, 8, 80, 256)           # 70B/405B decode of 64-512 sequences .. 405B 8192-token chunks


def in_flight(rate: float, ttft_s: float, tpot_s: float, output_mean: float) -> float:
    """Sequences in flight by Little's law: arrivals per second x seconds each spends inside."""
    return rate * (ttft_s + (output_mean - 1) * tpot_s)


def littles_law_rows(rows: list[F.Row], predicted: dict) -> list[dict]:
    """Per MLPerf server/interactive run with mean TTFT and TPOT rows: real and simulated batch."""
    by_id = {r.id: r for r in rows}
    out = []
    for rid in sorted(by_id):
        if not rid.endswith("-ttft-mean"):
            continue
        base = rid[: -len("-ttft-mean")]
        ttft, tpot = by_id[rid], by_id.get(base + "-tpot-mean")
        if tpot is None or rid not in predicted or tpot.id not in predicted:
            continue
        output_mean = F.keyed(ttft, "output_mean")
        rate = F.published_rate(ttft) / ttft.instances
        real = in_flight(rate, ttft.value, tpot.value, output_mean)
        sim = in_flight(rate, predicted[rid], predicted[tpot.id], output_mean)
        out.append({"run": base, "rate": rate, "real": real, "real_tpot": tpot.value,
                    "sim": sim, "sim_tpot": predicted[tpot.id]})
    return out


def server_offline_rows(rows: list[F.Row], predicted: dict) -> list[dict]:
    """Per system with a server/interactive and an offline throughput row (same id but the
    scenario): server / offline, as published and as predicted."""
    by_id = {r.id: r for r in rows}
    out = []
    for rid, r in sorted(by_id.items()):
        if r.kind != "capacity at the SLO":
            continue
        offline = by_id.get(rid.replace(f"-{r.scenario}-", "-offline-"))
        if offline is None or offline.id == rid or rid not in predicted or offline.id not in predicted:
            continue
        out.append({"run": rid, "real": r.value / offline.value, "sim": predicted[rid] / predicted[offline.id]})
    return out


def limit_rows(rows: list[F.Row], predicted: dict, left_out: list | None = None) -> list[dict]:
    """Per server/interactive throughput row (``<run>-tok``) whose run published p99 TTFT and p99
    TPOT (``<run>-ttft-p99``, ``<run>-tpot-p99``): each p99 over its limit (``F.mlperf_limits``),
    published and predicted at the published rate, and the capacity row's error (predicted /
    published - 1); the predicted figures are None where the row was not simulated. Runs without
    both p99 rows are appended to ``left_out``, when given."""
    by_id = {r.id: r for r in rows}
    out = []
    for rid, r in sorted(by_id.items()):
        if r.kind != "capacity at the SLO":
            continue
        base = rid[: -len("-tok")] if rid.endswith("-tok") else rid
        ttft, tpot = by_id.get(base + "-ttft-p99"), by_id.get(base + "-tpot-p99")
        if ttft is None or tpot is None:
            if left_out is not None:
                left_out.append(base)
            continue
        limits = F.mlperf_limits(r)
        if limits is None:
            raise ValueError(f"{rid}: no MLPerf latency limits for {r.model} {r.scenario} (fidelity.MLPERF_LIMITS)")
        ttft_limit, tpot_limit = limits
        sim = predicted.get(ttft.id), predicted.get(tpot.id)
        out.append({"run": base, "real_ttft": ttft.value / ttft_limit, "real_tpot": tpot.value / tpot_limit,
                    "sim_ttft": None if sim[0] is None else sim[0] / ttft_limit,
                    "sim_tpot": None if sim[1] is None else sim[1] / tpot_limit,
                    "error": predicted[rid] / r.value - 1 if rid in predicted else None})
    return out


def share(value: float | None, width: int) -> str:
    """A limit share right-aligned in ``width`` characters, "-" where it was not simulated."""
    return f"{'-' if value is None else f'{value:.2f}':>{width}}"


def allreduce_rows(inputs: dict) -> list[dict]:
    """Fitted over measured all-reduce time per (gpu, tp) at ``MESSAGE_MIB``."""
    out = []
    for gpu, g in sorted(inputs["gpus"].items()):
        for tp_key, raw in sorted(g.get("allreduce", {}).items()):
            tp = int(tp_key[2:])
            if tp not in KERNELS.get(gpu, {}).get("allreduce", {}):
                continue
            alpha, beta = KERNELS[gpu]["allreduce"][tp]
            sizes, times = zip(*sorted((int(b), float(t) * 1e-6) for b, t in raw.items()))
            ratios = {}
            for mib in MESSAGE_MIB:
                nbytes = mib * 2 ** 20
                measured = float(np.exp(np.interp(np.log(nbytes), np.log(sizes), np.log(times))))
                ratios[mib] = (alpha + nbytes / beta) / measured
            out.append({"gpu": gpu, "tp": tp, "ratios": ratios})
    return out


def main() -> int:
    report = json.loads((F.DATA / "report.json").read_text())
    print("Little's law at the published rate (sequences in flight per instance; mean TPOT):")
    print(f"  {'run':62} {'req/s':>7} {'real':>6} {'TPOT':>7} {'sim':>6} {'TPOT':>7} {'real/sim':>8}")
    rows = F.load_rows()
    for r in littles_law_rows(rows, report["predicted"]):
        print(f"  {r['run']:62} {r['rate']:7.3f} {r['real']:6.0f} {r['real_tpot'] * 1e3:5.0f}ms "
              f"{r['sim']:6.0f} {r['sim_tpot'] * 1e3:5.0f}ms {r['real'] / r['sim']:8.1f}")
    pairs = server_offline_rows(rows, report["predicted"])
    print("server (or interactive) throughput over offline throughput, same system:")
    print(f"  {'run':70} {'published':>9} {'simulated':>9}")
    for r in pairs:
        print(f"  {r['run']:70} {r['real']:9.3f} {r['sim']:9.3f}")
    if pairs:
        print(f"  {'mean':70} {np.mean([r['real'] for r in pairs]):9.3f} {np.mean([r['sim'] for r in pairs]):9.3f}")
    print("p99 TTFT and p99 TPOT over the scenario's limits at the published rate, and the capacity error:")
    print(f"  {'run':70} {'real TTFT':>9} {'TPOT':>5} {'sim TTFT':>9} {'TPOT':>5} {'capacity':>9}")
    left_out: list = []
    for r in limit_rows(rows, report["predicted"], left_out):
        error = "        -" if r["error"] is None else f"{r['error']:+9.1%}"
        print(f"  {r['run']:70} {r['real_ttft']:9.2f} {r['real_tpot']:5.2f} {share(r['sim_ttft'], 9)} "
              f"{share(r['sim_tpot'], 5)} {error}")
    if left_out:
        print(f"  left out (no published p99 TTFT and TPOT): {', '.join(left_out)}")
    print("all-reduce: fitted alpha + bytes / beta over the measured table, by message size:")
    print("  " + " " * 14 + "".join(f"{m:>9} MiB" for m in MESSAGE_MIB))
    for r in allreduce_rows(json.loads(KERNEL_INPUTS.read_text())):
        print(f"  {r['gpu']:>9} tp{r['tp']}" + "".join(f"{r['ratios'][m]:13.2f}" for m in MESSAGE_MIB))
    return 0


if __name__ == "__main__":
    sys.exit(main())
