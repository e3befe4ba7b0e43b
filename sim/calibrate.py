"""Calibration from a deployment's own benchmark runs: ``python -m sim calibrate RESULTS...``.

    python -m sim calibrate runs/*.json --model llama-3-8b --gpu h100-sxm --tp 1 --out my-h100.json
    python -m sim plan --model llama-3-8b --gpu h100-sxm --profile my-h100.json --qps 50 ...

Reads the JSON files ``vllm bench serve --save-result`` writes (the schema is the ``result`` dict
that ``vllm/benchmarks/serve.py`` builds in ``benchmark()`` and ``main_async()`` saves, vLLM commit
009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1; the older ``benchmarks/benchmark_serving.py`` writes the
same keys): per-request arrays when the run was saved with ``--save-detailed`` (``input_lens``,
``output_lens``, ``ttfts`` and ``itls`` in seconds, ``latencies``, ``start_times``, ``errors``),
else the summary (``mean_ttft_ms``, ``median_ttft_ms``, ``mean_tpot_ms``, ``median_tpot_ms``,
``output_throughput``, token totals and ``completed``). The load comes from ``request_rate``
(a number, or ``"inf"``), ``burstiness`` and ``max_concurrency``: a rate is Poisson (gamma with
shape ``burstiness`` otherwise, as vLLM draws it; ``start_times`` replayed when saved), a
concurrency a closed loop of that many clients, neither an offline batch.

Each file is simulated with the same load and lengths on the preset's calibrated step model with
at most three free terms (``DEFAULT_TERMS``: ``mfu``, ``bandwidth``, ``step_overhead``; ``terms=``
picks others of ``TERMS``, which adds ``host_s_per_seq``, the host time per decoding sequence),
fitted by Levenberg-Marquardt on the log ratios simulated / measured of ``STATS`` (mean and
median TTFT and TPOT, output tokens/s) with a finite-difference Jacobian (numpy only). ``calibrate``
returns the fit with its residuals per file; ``write_profile`` saves the terms as a profile
(``sim.profile``) that ``presets.instance(..., profile=)``, ``plan``, ``sweep`` and ``fleet`` take.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim import profile as profiles
from sim.progress import MODES, progress_bar, progress_flag
from sim.setup import Setup

TERMS = profiles.TERMS
DEFAULT_TERMS = ("mfu", "bandwidth", "step_overhead")   # fitted unless ``terms=`` / ``--fit`` says otherwise
START_IF_ZERO = {"step_overhead": 1e-3, "host_s_per_seq": 10e-6}   # where a term the preset leaves at 0 starts
STATS = ("ttft_mean", "ttft_median", "tpot_mean", "tpot_median", "output_tok_s")
SUMMARY_FIELDS = {"ttft_mean": "mean_ttft_ms", "ttft_median": "median_ttft_ms", "tpot_mean": "mean_tpot_ms",
                  "tpot_median": "median_tpot_ms", "output_tok_s": "output_throughput"}
DETAIL_FIELDS = ("input_lens", "output_lens", "ttfts")
MAX_ITERATIONS = 60
FD_STEPS = (0.05, 0.01, 0.002)     # finite-difference steps, in log of a term, widest first


@dataclass(frozen=True)
class Measurement:
    """One benchmark run: its load, its requests' lengths and the measured statistics."""

    file: str
    kind: str                       # "rate", "concurrency" or "offline"
    rate: float | None
    burstiness: float
    concurrency: int | None
    arrival: tuple | None           # replayed send times (s from the first), when saved
    input_len: tuple
    output_len: tuple
    stats: dict                     # STATS name -> measured value (seconds, tokens/s)
    detailed: bool


# --- reading vLLM's files ---------------------------------------------------------------------

def read(path) -> Measurement:
    """A ``vllm bench serve --save-result`` file; ValueError naming the file and the field."""
    path = Path(path)
    where = str(path)
    data = profiles.read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a vllm bench serve result is a JSON object, got {type(data).__name__}")
    field = _Fields(data, where)
    rate = field.rate()
    concurrency = field.whole("max_concurrency", optional=True)
    burstiness = field.number("burstiness", optional=True) or 1.0
    if rate is not None and concurrency is not None:
        raise ValueError(f"{where}: fields 'request_rate' ({rate:g}) and 'max_concurrency' ({concurrency}) are "
                         "both set: a rate capped by a concurrency is not modelled; rerun with one of them")
    kind = "rate" if rate is not None else "concurrency" if concurrency is not None else "offline"
    detailed = all(k in data for k in DETAIL_FIELDS)
    if detailed:
        inp, out, stats, arrival = _from_details(data, field, where)
    else:
        completed = field.whole("completed")
        inp = (max(1, round(field.number("total_input_tokens") / completed)),) * completed
        out = (max(1, round(field.number("total_output_tokens") / completed)),) * completed
        stats = {name: field.number(key) * (1e-3 if key.endswith("_ms") else 1.0)
                 for name, key in SUMMARY_FIELDS.items()}
        arrival = None
    if kind != "rate":
        arrival = None
    return Measurement(where, kind, rate, float(burstiness), concurrency, arrival, inp, out, stats, detailed)


class _Fields:
    """Typed access to a result's fields, each error naming the file and the field."""

    def __init__(self, data: dict, where: str):
        self.data, self.where = data, where

    def _bad(self, key, what, value):
        return ValueError(f"{self.where}: field {key!r} must be {what}, got {value!r}")

    def number(self, key, optional=False, low=0.0):
        if key not in self.data or self.data[key] is None:
            if optional:
                return None
            raise ValueError(f"{self.where}: field {key!r} is missing (vllm bench serve --save-result writes it)")
        v = self.data[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < low:
            raise self._bad(key, f"a number >= {low:g}", v)
        return float(v)

    def whole(self, key, optional=False):
        v = self.data.get(key)
        if v is None:
            if optional:
                return None
            raise ValueError(f"{self.where}: field {key!r} is missing (vllm bench serve --save-result writes it)")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise self._bad(key, "a whole number >= 1", v)
        return v

    def rate(self):
        v = self.data.get("request_rate", "inf")
        if v in ("inf", None) or (isinstance(v, float) and math.isinf(v)):
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not math.isfinite(v):
            raise self._bad("request_rate", 'a number > 0 or "inf"', v)
        return float(v)

    def array(self, key, n=None):
        v = self.data.get(key)
        if not isinstance(v, list) or (n is not None and len(v) != n):
            size = f" of {n} entries (one per request)" if n is not None else ""
            raise self._bad(key, f"a list{size}", v if not isinstance(v, list) else f"{len(v)} entries")
        return v


def _from_details(data, field: _Fields, where: str):
    """Lengths, statistics and send times from the per-request arrays (successful requests only)."""
    inp = field.array("input_lens")
    n = len(inp)
    out, ttft = field.array("output_lens", n), field.array("ttfts", n)
    errors = data.get("errors") if isinstance(data.get("errors"), list) and len(data["errors"]) == n else [""] * n
    latency = data.get("latencies") if isinstance(data.get("latencies"), list) and len(data["latencies"]) == n else None
    itls = data.get("itls") if isinstance(data.get("itls"), list) and len(data["itls"]) == n else None
    starts = data.get("start_times") if isinstance(data.get("start_times"), list) and len(data["start_times"]) == n else None
    keep, tpots = [], []
    for i in range(n):
        for key, seq in (("input_lens", inp), ("output_lens", out)):
            if isinstance(seq[i], bool) or not isinstance(seq[i], int) or seq[i] < 0:
                raise ValueError(f"{where}: field {key!r} entry {i} must be a whole number >= 0, got {seq[i]!r}")
        if errors[i] or out[i] < 1 or inp[i] < 1:
            continue                               # a failed request: vLLM leaves it out of its metrics too
        if isinstance(ttft[i], bool) or not isinstance(ttft[i], (int, float)) or not ttft[i] >= 0:
            raise ValueError(f"{where}: field 'ttfts' entry {i} must be seconds >= 0, got {ttft[i]!r}")
        keep.append(i)
        if out[i] > 1:                             # vLLM's TPOT: (latency - ttft) / (output_len - 1)
            if latency is not None:
                tpots.append((float(latency[i]) - float(ttft[i])) / (out[i] - 1))
            elif itls is not None and isinstance(itls[i], list):
                tpots.append(float(sum(itls[i])) / (out[i] - 1))
    if not keep:
        raise ValueError(f"{where}: no successful request (every entry of 'errors' is set or 'output_lens' is 0)")
    if not tpots:
        raise ValueError(f"{where}: fields 'latencies' or 'itls' are needed for TPOT with --save-detailed files")
    ttfts = np.array([float(ttft[i]) for i in keep])
    stats = {"ttft_mean": float(ttfts.mean()), "ttft_median": float(np.median(ttfts)),
             "tpot_mean": float(np.mean(tpots)), "tpot_median": float(np.median(tpots)),
             "output_tok_s": field.number("output_throughput")}
    arrival = None
    if starts is not None:
        t = np.array([float(starts[i]) for i in keep])
        arrival = tuple((t - t.min()).tolist())
    return tuple(inp[i] for i in keep), tuple(out[i] for i in keep), stats, arrival


# --- simulating a run --------------------------------------------------------------------------

def workload_of(m: Measurement, seed: int = 0):
    """The run's load for the simulator: its send times, a Poisson (or gamma) draw at its rate, a
    closed loop of its clients, or an offline batch; its requests' lengths in order."""
    from sim.workload import Workload, gamma, poisson
    n = len(m.input_len)
    if m.kind == "offline":
        return Workload("offline", (0.0,) * n, m.input_len, m.output_len)
    if m.kind == "concurrency":
        return Workload("closed_loop", None, m.input_len, m.output_len, int(m.concurrency), 0.0)
    if m.arrival is not None:
        order = np.argsort(m.arrival, kind="stable")
        return Workload("replay", tuple(float(m.arrival[i]) for i in order),
                        tuple(m.input_len[i] for i in order), tuple(m.output_len[i] for i in order))
    times = (poisson(m.rate, n, 1, 1, seed) if m.burstiness == 1.0
             else gamma(m.rate, n, 1, 1, cv=1 / math.sqrt(m.burstiness), seed=seed)).arrival
    return Workload("poisson", times, m.input_len, m.output_len)


def simulated_stats(setup: Setup, m: Measurement, seed: int = 0) -> dict:
    """``STATS`` of the simulator's run of ``m`` on ``setup`` (vLLM's definitions)."""
    from sim.workload import run
    result = run(setup, workload_of(m, seed))
    tpot = result.tpot[result.output_len > 1]
    duration = float(result.finish.max() - result.arrival.min())
    return {"ttft_mean": float(result.ttft.mean()), "ttft_median": float(np.median(result.ttft)),
            "tpot_mean": float(tpot.mean()) if len(tpot) else 0.0,
            "tpot_median": float(np.median(tpot)) if len(tpot) else 0.0,
            "output_tok_s": float(result.output_len.sum()) / duration}


# --- the fit -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fit:
    """The fitted terms, the preset's, and each file's residuals (log simulated / measured)."""

    terms: dict
    preset: dict
    residuals: dict                  # file -> {stat: simulated / measured - 1}
    rms: float                       # root mean square of the log residuals at the fit
    iterations: int

    def report(self) -> str:
        lines = ["term            preset         fitted"]
        for k in self.terms:
            lines.append(f"{k:<14} {self.preset[k]:>10.4g}  {self.terms[k]:>12.4g}  ({self.terms[k] / self.preset[k] - 1:+.1%})")
        lines.append("residuals, simulated / measured - 1, per file:")
        lines.append(f"{'':40} " + " ".join(f"{s:>12}" for s in STATS))
        for file, r in self.residuals.items():
            name = file if len(file) <= 40 else "..." + file[-37:]
            lines.append(f"{name:40} " + " ".join(f"{r[s]:>+12.1%}" if s in r else f"{'-':>12}" for s in STATS))
        lines.append(f"rms of the log residuals: {self.rms:.3g} after {self.iterations} iterations")
        return "\n".join(lines)


def fit(measurements: list[Measurement], base: Setup, terms=DEFAULT_TERMS, seed: int = 0, progress=None) -> Fit:
    """The values of ``terms`` (at most three of ``TERMS``) that make the simulated runs of
    ``measurements`` on ``base`` closest to the measured ones (least squares on log ratios).
    ``progress(done)`` is called after each simulated run (``sim.progress.progress_bar``)."""
    terms = tuple(terms)
    if not terms or len(terms) > 3 or len(set(terms)) != len(terms) or any(t not in TERMS for t in terms):
        raise ValueError(f"terms must be one to three distinct names of {TERMS}, got {terms!r}")
    if not measurements:
        raise ValueError("no benchmark results to calibrate on")
    preset = {t: float(getattr(base, t)) or START_IF_ZERO.get(t, 1e-3) for t in terms}

    def setup_at(x):
        values = {t: preset[t] * math.exp(v) for t, v in zip(terms, x)}
        if "mfu" in values:
            values["mfu"] = min(values["mfu"], 1.0)
        return base.replace(**values)

    runs = 0

    def simulated(s, m):
        nonlocal runs
        out = simulated_stats(s, m, seed)
        runs += 1
        if progress is not None:
            progress(runs)
        return out

    def residuals(x):
        s = setup_at(x)
        return np.array([math.log(max(sim[k], 1e-12) / m.stats[k])
                         for m in measurements for sim in [simulated(s, m)] for k in STATS
                         if m.stats.get(k, 0) > 0])

    x, iterations = _levenberg_marquardt(residuals, np.zeros(len(terms)))
    s = setup_at(x)
    per_file = {}
    for m in measurements:
        sim = simulated(s, m)
        per_file[m.file] = {k: sim[k] / m.stats[k] - 1 for k in STATS if m.stats.get(k, 0) > 0}
    r = residuals(x)
    return Fit({t: float(getattr(s, t)) for t in terms}, preset, per_file, float(np.sqrt(np.mean(r ** 2))), iterations)


def _levenberg_marquardt(f, x0: np.ndarray, tol: float = 1e-5):
    """Minimise |f(x)|^2 from x0: damped Gauss-Newton steps on a central-difference Jacobian.

    A simulated statistic is piecewise smooth in the terms (a step's time is the larger of its
    compute and its memory time, and the batches change where a step ends), so the difference step
    starts wide (``FD_STEPS[0]``, a few percent) and narrows when no damped step improves the fit:
    the wide one sees the trend through the kinks, the narrow ones finish the last digits."""
    x, r = x0.astype(float), f(x0)
    cost, lam, it = float(r @ r), 1e-3, 0
    for h in FD_STEPS:
        while it < MAX_ITERATIONS:
            it += 1
            J = np.empty((len(r), len(x)))
            for j in range(len(x)):
                dx = np.zeros_like(x)
                dx[j] = h
                J[:, j] = (f(x + dx) - f(x - dx)) / (2 * h)
            A, g = J.T @ J, J.T @ r
            improved, lam = False, max(lam, 1e-6)
            while lam < 1e6:
                step = np.clip(np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), -g), -1.0, 1.0)
                trial = f(x + step)
                if float(trial @ trial) < cost:
                    x, r, cost, lam, improved = x + step, trial, float(trial @ trial), lam / 10, True
                    break
                lam *= 10
            if not improved or np.max(np.abs(step)) < tol or cost < 1e-20:
                break
    return x, it


# --- the command -------------------------------------------------------------------------------

def calibrate(paths, model: str, gpu: str, *, tp: int = 1, weight_dtype: str = "bf16",
              kv_dtype: str | None = None, mem_util: float = 0.9, max_num_seqs: int = 256,
              max_num_batched_tokens: int = 8192, terms=DEFAULT_TERMS, seed: int = 0, progress=None) -> tuple[Fit, dict]:
    """Read ``paths``, fit ``terms`` of the deployment's preset to them; (fit, deployment).
    ``progress(done)`` is called after each simulated run."""
    from sim import presets
    measurements = [read(p) for p in paths]
    base = presets.instance(model, gpu, tp=tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype, mem_util=mem_util,
                            max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens)
    deployment = dict(model=presets.model_key(model), gpu=presets.gpu_key(gpu), tp=tp,
                      weight_dtype=weight_dtype, kv_dtype=kv_dtype or weight_dtype)
    return fit(measurements, base, terms, seed, progress), deployment


def write_profile(path, result: Fit, deployment: dict) -> dict:
    return profiles.save(path, deployment, result.terms, result.preset,
                         {"rms": result.rms, "files": [{"file": f, "residuals": r} for f, r in result.residuals.items()]})


def add_cli(sub) -> None:
    """Register ``python -m sim calibrate`` on the CLI's subparsers."""
    from sim import presets
    p = sub.add_parser("calibrate", help="fit the step model to your own vllm bench serve results")
    p.add_argument("results", nargs="+", help="JSON files written by vllm bench serve --save-result")
    p.add_argument("--model", required=True, help=f"one of {', '.join(sorted(presets.MODELS))}")
    p.add_argument("--gpu", required=True, help=f"one of {', '.join(sorted(presets.GPUS))}")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs per instance")
    p.add_argument("--dtype", default="bf16", choices=sorted(presets.DTYPE_BYTES), help="weight dtype")
    p.add_argument("--kv-dtype", default=None, choices=sorted(presets.DTYPE_BYTES), help="KV dtype (default: --dtype)")
    p.add_argument("--mem-util", type=float, default=0.9, help="the server's --gpu-memory-utilization")
    p.add_argument("--max-num-seqs", type=int, default=256, help="the server's --max-num-seqs")
    p.add_argument("--max-num-batched-tokens", type=int, default=8192, help="the server's --max-num-batched-tokens")
    p.add_argument("--fit", default=",".join(DEFAULT_TERMS),
                   help=f"one to three terms to fit, comma separated (of {', '.join(TERMS)}; default %(default)s)")
    p.add_argument("--out", default="profile.json", help="where to write the profile (default profile.json)")
    progress_flag(p)
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    with progress_bar("benchmark runs simulated", enabled=MODES[args.progress]) as bar:
        result, deployment = calibrate(args.results, args.model, args.gpu, tp=args.tp, weight_dtype=args.dtype,
                                       kv_dtype=args.kv_dtype, mem_util=args.mem_util,
                                       max_num_seqs=args.max_num_seqs,
                                       max_num_batched_tokens=args.max_num_batched_tokens,
                                       terms=[t.strip() for t in args.fit.split(",") if t.strip()], progress=bar)
    print(result.report())
    write_profile(args.out, result, deployment)
    print(f"wrote {args.out}: use it with --profile {args.out} (plan, sweep, fleet) or "
          f"presets.instance(..., profile={args.out!r})")
    return 0
