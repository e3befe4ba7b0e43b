"""The validation harness: published measurements (tests/validation/) against the simulator.

Every row of ``tests/validation/rows_*.csv`` is one published number: a model served on a GPU type
at a tensor-parallel size, under a stated workload, and one metric of it (output tokens/s, TTFT,
ITL, ...). ``predict(row)`` runs the same workload through ``sim`` with the presets' default
(calibrated) factors and returns the simulator's value of that metric; nothing in this file is
tuned per row (the two host-time constants are chosen for the whole set, ``GRID``). A row's own
limits are used where it states them (the ``max_num_seqs`` column, ``max_num_tokens=`` in its
assumptions: the submitter's run-time token budget); the engine-level defaults (``ENGINES``) stand
in for what it does not (batch limits, token budget, memory fraction), one set per engine family.
Each engine's admission policy at saturation (``admission_engine``) is off unless ``ADMISSION``.

How each scenario is simulated (``instances`` = num_gpus / (tp x pp) data-parallel copies, each
taking an even share of the load):

- ``offline``: the row's request count (``num_requests=N`` in its assumptions, else
  ``OFFLINE_REQUESTS`` per instance) all arrive at t = 0; throughput = tokens / time to the last finish.
- ``concurrency``: a closed loop of ``concurrency`` clients (shared evenly), no think time. Its
  latency statistics leave out the first wave (one request per client), which all arrive at t = 0
  together: a start-up burst, where benchmark clients measure the steady state after a warm-up.
- ``rate``: Poisson arrivals at ``concurrency`` requests/s over the system (the column holds the rate).
- ``server`` / ``interactive`` (MLPerf): throughput rows are the capacity at the scenario's limits:
  the largest Poisson rate whose p99 TTFT and p99 TPOT are each within them (LoadGen checks each
  percentile on its own), found by ``sim.capacity``'s steady-state search (``criterion="each"``), the
  search ``plan`` answers with, not by latency at the published rate. Latency rows are
  simulated at the published rate (``samples_s=``). Those runs sit at 90-100 % of the system's
  offline throughput, where latency depends on how the scheduler queues work at saturation (a real
  engine grows its batch and slows every step; the handbook's reservation rule keeps the batch and
  queues new requests), not only on the step model: ``saturated(row)`` marks them, and the report keeps
  them out of the headline figures and the fit, in a slice of their own.

Lengths are the row's integers, or a dataset's distribution from ``datasets.json``: a lognormal
with the published mean and median (capped at the published maximum), never a length inferred
through the model under test.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from sim import capacity, kv, lengths, presets, run, workload
from sim.executors import map_jobs
from sim.metrics import percentile

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "validation"

COLUMNS = ["id", "source", "model", "gpu", "num_gpus", "tp", "pp", "weight_dtype", "kv_dtype", "engine",
           "scenario", "input", "output", "concurrency", "max_num_seqs", "metric", "statistic", "value",
           "assumptions"]
SCENARIOS = ("offline", "concurrency", "rate", "server", "interactive")
METRICS = ("output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "req_s", "samples_s",
           "ttft_s", "itl_s", "tpot_s", "e2e_s")
THROUGHPUT = ("output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "req_s", "samples_s")
STATISTICS = ("value", "mean", "median", "p90", "p99")

# Published model names that share a preset's shapes (Llama 3.1 / 3.3 differ from 3 only in RoPE
# scaling and context length, which the step model does not see).
MODELS = {"llama-3.1-8b": "llama-3-8b", "llama-3.1-70b": "llama-3-70b", "llama-3.3-70b": "llama-3-70b"}

# Batch limits and memory fraction where a row does not state them, by engine family: TensorRT-LLM
# (trtllm-bench picks up to 2048 sequences and 8192 tokens per step; KV takes 0.9 of free memory),
# vLLM (V0's 256 sequences, V1's 1024 on 80 GB+ GPUs; 0.9 of memory), SGLang (chunked prefill of
# 8192, running requests bounded by memory).
ENGINES = {
    "tensorrt-llm": dict(max_num_seqs=2048, max_num_batched_tokens=8192, mem_util=0.9),
    "nim": dict(max_num_seqs=2048, max_num_batched_tokens=8192, mem_util=0.9),
    "vllm": dict(max_num_seqs=256, max_num_batched_tokens=8192, mem_util=0.9),
    "sglang": dict(max_num_seqs=1024, max_num_batched_tokens=8192, mem_util=0.88),
    "mlperf": dict(max_num_seqs=1024, max_num_batched_tokens=8192, mem_util=0.9),
}
OFFLINE_REQUESTS = 2000            # per instance (at least 16 batches), where a row does not say
CLOSED_LOOP_ROUNDS = 8             # requests per client in a concurrency run
RATE_REQUESTS = 1000               # requests of a Poisson run, where a row does not say
SERVER_DURATION_S = 600            # simulated seconds of an MLPerf server latency row's run
# MLPerf Inference LoadGen's Offline run (mlcommons/inference loadgen/test_settings_internal.cc,
# mlperf.conf): one query of min_duration (600 s) x 1.1 x the expected samples/s, at least
# min_query_count samples (24,576) over the whole system
MLPERF_OFFLINE_S = 600
MLPERF_OFFLINE_MIN_SAMPLES = 24576
MLPERF_LIMITS = {                  # (p99 TTFT, p99 TPOT) seconds, per model and scenario
    ("llama-2-70b", "server"): (2.0, 0.2), ("llama-2-70b", "interactive"): (0.45, 0.04),
    ("mixtral-8x7b", "server"): (2.0, 0.2),
    ("llama-3.1-405b", "server"): (6.0, 0.175),
    ("llama-3.1-8b", "server"): (2.0, 0.1), ("llama-3.1-8b", "interactive"): (0.5, 0.03),
}


@dataclass(frozen=True)
class Row:
    """One published number and what it was measured on (the CSV's columns, typed)."""

    id: str
    source: str
    model: str
    gpu: str
    num_gpus: int
    tp: int
    pp: int
    weight_dtype: str
    kv_dtype: str
    engine: str
    scenario: str
    input: str
    output: str
    concurrency: float | None
    max_num_seqs: int | None
    metric: str
    statistic: str
    value: float
    assumptions: str
    file: str = ""

    @property
    def instances(self) -> int:
        return self.num_gpus // (self.tp * self.pp)

    @property
    def kind(self) -> str:
        """What the row measures, as the targets are set: ``offline throughput``, ``capacity at the
        SLO`` (MLPerf server / interactive throughput), ``latency at fixed concurrency``, and the
        rest (``throughput at fixed concurrency``, ``... at a fixed rate``, ``latency at saturation``)."""
        throughput = self.metric in THROUGHPUT
        if self.scenario == "offline":
            return "offline throughput" if throughput else "offline latency"
        if self.scenario in ("server", "interactive"):
            return "capacity at the SLO" if throughput else "latency at saturation"
        where = "fixed concurrency" if self.scenario == "concurrency" else "a fixed rate"
        return f"{'throughput' if throughput else 'latency'} at {where}"

    @property
    def slice_keys(self) -> dict:
        """The slices a row belongs to, by dimension (``bench_validation.slice_table``)."""
        return {"slice": self.kind, "slice/year": f"{self.kind} / {source_year(self.source)}",
                "gpu": self.gpu, "tp": f"tp{self.tp}", "model": self.model,
                "metric": self.metric, "scenario": self.scenario, "source": self.source}


# --- Reading and checking the files ------------------------------------------------------------

def row_files(folder: Path = DATA) -> list[Path]:
    return sorted(Path(folder).glob("rows_*.csv"))


def load_rows(folder: Path = DATA) -> list[Row]:
    """Every row of every ``rows_*.csv``; raises ValueError naming the file, line and column."""
    out = []
    for path in row_files(folder):
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                raise ValueError(f"{path.name}: columns must be {COLUMNS}, got {reader.fieldnames}")
            for line, raw in enumerate(reader, start=2):
                try:
                    out.append(_typed(raw, path.name))
                except ValueError as e:
                    raise ValueError(f"{path.name} line {line}: {e}") from None
    return out


def _typed(raw: dict, file: str) -> Row:
    if None in raw:               # csv.DictReader's key for the fields past the header's last column
        raise ValueError(f"{len(COLUMNS) + len(raw[None])} fields where the header has {len(COLUMNS)} "
                         "(an unquoted comma in a field? quote it or use another separator)")

    def whole(name, low=1, optional=False):
        text = (raw[name] or "").strip()
        if not text and optional:
            return None
        if not re.fullmatch(r"\d+", text) or int(text) < low:
            raise ValueError(f"{name} must be a whole number >= {low}, got {text!r}")
        return int(text)

    def real(name, optional=False):
        text = (raw[name] or "").strip()
        if not text and optional:
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {text!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {text!r}")
        return value

    for name, allowed in (("scenario", SCENARIOS), ("metric", METRICS), ("statistic", STATISTICS)):
        if raw[name] not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {raw[name]!r}")
    for name in ("id", "source", "model", "gpu", "engine", "input", "output"):
        if not (raw[name] or "").strip():
            raise ValueError(f"{name} is empty")
    row = Row(id=raw["id"].strip(), source=raw["source"].strip(), model=raw["model"].strip(),
              gpu=raw["gpu"].strip(), num_gpus=whole("num_gpus"), tp=whole("tp"), pp=whole("pp"),
              weight_dtype=raw["weight_dtype"].strip(), kv_dtype=raw["kv_dtype"].strip(),
              engine=raw["engine"].strip(), scenario=raw["scenario"], input=raw["input"].strip(),
              output=raw["output"].strip(), concurrency=real("concurrency", optional=True),
              max_num_seqs=whole("max_num_seqs", optional=True), metric=raw["metric"],
              statistic=raw["statistic"], value=real("value"), assumptions=raw["assumptions"] or "",
              file=file)
    if row.num_gpus % (row.tp * row.pp):
        raise ValueError(f"num_gpus {row.num_gpus} is not a multiple of tp x pp = {row.tp * row.pp}")
    if row.scenario in ("concurrency", "rate") and row.concurrency is None:
        raise ValueError(f"a {row.scenario} row needs the concurrency column (clients or req/s)")
    return row


def load_sources(folder: Path = DATA) -> dict[str, dict]:
    with (Path(folder) / "sources.csv").open(newline="") as f:
        return {r["source"]: r for r in csv.DictReader(f)}


@lru_cache(maxsize=None)
def source_year(source: str) -> str:
    """The year ``sources.csv`` dates the source (its publication: a proxy for the engine release the
    rows measured, against the kernel tables' TensorRT-LLM 1.0-1.3 of 2025-2026), or "undated"."""
    return load_sources().get(source, {}).get("date", "")[:4] or "undated"


def load_datasets(folder: Path = DATA) -> dict[str, dict]:
    return json.loads((Path(folder) / "datasets.json").read_text())


def problems(rows: list[Row], sources: dict, datasets: dict) -> list[str]:
    """What is wrong with the files as a whole (empty when they are consistent)."""
    found = []
    seen = set()
    for r in rows:
        if r.id in seen:
            found.append(f"{r.id}: duplicate id")
        seen.add(r.id)
        if r.source not in sources:
            found.append(f"{r.id}: source {r.source!r} is not in sources.csv")
        for side in ("input", "output"):
            text = getattr(r, side)
            if not text.isdigit() and text not in datasets:
                found.append(f"{r.id}: {side} {text!r} is neither a token count nor a dataset in datasets.json")
    for key, s in sources.items():
        if not (s.get("url", "").startswith("https://") and s.get("title") and s.get("date")):
            found.append(f"source {key}: needs an https url, a title and a date")
    return found


# --- What the simulator can run ----------------------------------------------------------------

def preset_model(row: Row) -> str:
    return MODELS.get(row.model, row.model)


def unsupported(row: Row, datasets: dict | None = None) -> str | None:
    """Why the simulator cannot run this row as published (None when it can)."""
    if row.pp > 1:
        return "pipeline parallelism is not modelled"
    if row.metric == "e2e_s" and row.scenario == "offline":
        return "offline end-to-end latency depends on the engine's admission order, not on the step model"
    if row.scenario in ("server", "interactive"):
        if mlperf_limits(row) is None:
            return f"no latency limits known for {row.model} {row.scenario}"
        if row.metric not in THROUGHPUT and keyed(row, "samples_s") is None:
            return "the run's samples/s is not stated, so its load is unknown"
    try:
        setup_for(row)                     # unknown model or GPU, a dtype it lacks, weights that do not fit
    except ValueError as e:
        return str(e)
    datasets = load_datasets() if datasets is None else datasets
    for side in ("input", "output"):
        text = getattr(row, side)
        if not text.isdigit() and "mean" not in datasets.get(text, {}).get(side, {}):
            return f"dataset {text!r} has no published {side} length statistics"
    return None


def mlperf_limits(row: Row) -> tuple[float, float] | None:
    """(p99 TTFT, p99 TPOT) seconds of the row's MLPerf scenario, by its model or its preset's."""
    return MLPERF_LIMITS.get((row.model, row.scenario)) or MLPERF_LIMITS.get((preset_model(row), row.scenario))


def engine_defaults(row: Row) -> dict:
    name = row.engine.lower()
    for key, values in ENGINES.items():
        if key in name.replace(" ", "-") or key in row.source.lower():
            return dict(values)
    return dict(ENGINES["vllm"])


# Each engine's admission at saturation (``sim.kv.admission_policy``), by what the row ran:
# - vLLM: paged blocks with preemption ("vllm" -> sim.kv.Paged);
# - SGLang: the new_token_ratio reservation ("sglang" -> sim.kv.RatioReserve);
# - NVIDIA's MLPerf harness: its configs set TensorRT-LLM's batch_scheduler_policy 'max_util'
#   (MAX_UTILIZATION: admit while blocks are free, pause a request when they run short;
#   ServerGPUBaseConfig in MLPerf Inference v5.0 closed/Cisco/configs/llama3_1-405b/Server/__init__.py,
#   NVIDIA's config as Cisco submitted it; read in the mirror ntuhpc/mlperf_inference_results_v5.0
#   at cf35411), the rule sim.kv.Paged models ("vllm"); v4.1's C++
#   harness_llm source is not in its published results, so its policy is assumed the same;
# - TensorRT-LLM otherwise (trtllm-bench, NIM): the default GUARANTEED_NO_EVICT, the handbook's
#   whole-sequence reservation ("trtllm" -> sim.kv.Reserve, the Setup's None).
# Off by default (``ADMISSION = False``: every row keeps the handbook's reservation): with paged
# blocks a 1000-sequence batch simulates about ten times slower, too slow for the fitted grid on a
# small machine, and on the capacity rows it moves the answers by 0 to +3.5 points (bench_validation
# --admission measures it).
ADMISSION = False
WHAT_IF = ()            # names of benchmarks/what_if.py terms added to every row's Setup (none by default)


def admission_engine(row: Row) -> str:
    """The ``sim.kv.admission_policy`` engine name for the row's admission at saturation."""
    name = row.engine.lower()
    if name.startswith("vllm"):
        return "vllm"
    if name.startswith("sglang"):
        return "sglang"
    if "harness" in name or row.source.startswith("mlperf"):
        return "vllm"                               # MLPerf's TensorRT-LLM: MAX_UTILIZATION (above)
    return "trtllm"


def setup_for(row: Row):
    """One instance of the row's deployment with the presets' default (calibrated) factors.

    The row's own limits where it states them: the ``max_num_seqs`` column, and ``max_num_tokens=N``
    in its assumptions (the engine's runtime token budget per step, TensorRT-LLM's max_num_tokens,
    vLLM's max_num_batched_tokens); the engine family's defaults (``ENGINES``) otherwise. With
    ``ADMISSION``, the engine's admission policy at saturation (``admission_engine``)."""
    d = engine_defaults(row)
    if row.max_num_seqs:
        d["max_num_seqs"] = row.max_num_seqs
    tokens = keyed(row, "max_num_tokens")
    if tokens is not None:
        if tokens != int(tokens) or tokens < 1:
            raise ValueError(f"{row.id}: max_num_tokens must be a whole number >= 1, got {tokens:g}")
        d["max_num_batched_tokens"] = int(tokens)
    setup = presets.instance(preset_model(row), row.gpu, tp=row.tp, weight_dtype=row.weight_dtype,
                             kv_dtype=row.kv_dtype or None, mem_util=d["mem_util"],
                             max_num_seqs=d["max_num_seqs"], max_num_batched_tokens=d["max_num_batched_tokens"])
    if ADMISSION:
        setup = setup.replace(kv=kv.admission_policy(admission_engine(row)))
    if WHAT_IF:                          # terms not in the presets (benchmarks/what_if.py)
        import what_if
        setup = what_if.apply(setup, WHAT_IF, preset_model(row), row.gpu, row.tp, row.weight_dtype,
                              row.kv_dtype or row.weight_dtype)
    return setup


def length_of(row: Row, side: str, datasets: dict) -> lengths.Length:
    """A fixed count, or the dataset's published distribution.

    With the dataset's percentiles (``percentiles``: its 0th to 100th, from the per-sample lengths;
    ``benchmarks/dataset_percentiles.py``) the lengths are drawn from the inverse CDF through them
    (log-linear between them); with only published quantiles (p10, median, p90, p99, max), through
    those, from 1 at the bottom; either scaled to the published mean; with
    only a mean and a median, from a lognormal with that mean and median. A row that states the run's own mean output
    (``output_mean=...``: the log's tokens/s over samples/s, a measurement) rescales the
    dataset's output shape to that mean; otherwise a dataset's ``generated_mean`` (what the model
    generated on it, when published) is used in place of the reference answers' mean.
    """
    text = getattr(row, side)
    if text.isdigit():
        return lengths.fixed(int(text))
    facts = datasets[text][side]
    mean = float(facts["mean"])
    target = keyed(row, "output_mean") if side == "output" else None
    if target is None and side == "output":
        target = facts.get("generated_mean")
    return _dataset_length(text, side, json.dumps(facts, sort_keys=True), float(target or mean))


QUANTILES = (("p10", 0.10), ("median", 0.50), ("p90", 0.90), ("p99", 0.99), ("max", 1.0))


@lru_cache(maxsize=None)
def _dataset_length(name: str, side: str, facts_json: str, mean: float) -> lengths.Length:
    facts = json.loads(facts_json)
    high = int(facts["max"]) if facts.get("max") else None
    if facts.get("percentiles"):                 # the dataset's own 0th..100th percentiles
        xs = [float(x) for x in facts["percentiles"]]
        points = list(zip(np.linspace(0.0, 1.0, len(xs)), xs))
    else:                                         # only the published quantiles, from 1 at the bottom
        points = [(0.0, 1.0)] + [(q, float(facts[k])) for k, q in QUANTILES if facts.get(k)]
    if len(points) >= 4:
        qs, xs = zip(*points)
        grid = (np.arange(20000) + 0.5) / 20000
        samples = np.exp(np.interp(grid, qs, np.log(xs)))        # log-linear between the quantiles
        for _ in range(20):                                       # then scaled to the mean, capped
            got = np.clip(np.rint(samples), 1, high or None).mean()
            if abs(got / mean - 1) < 1e-3:
                break
            samples *= mean / got
        samples = np.clip(np.rint(samples), 1, high or None).astype(int)
        return lengths.empirical(samples.tolist())
    median = float(facts.get("median") or 0)
    cv = math.sqrt(math.exp(2 * math.log(mean / median)) - 1) if 0 < median < mean else 1.0
    return _capped_lognormal(mean, cv, high)


@lru_cache(maxsize=None)
def _capped_lognormal(mean: float, cv: float, high: int | None) -> lengths.Length:
    """A lognormal whose mean after capping at ``high`` is ``mean`` (a cap lowers a plain one's)."""
    target, dist = mean, lengths.lognormal(mean, cv, high=high)
    for _ in range(30):
        got = dist.mean
        if abs(got - mean) < 0.05 * max(1.0, mean / 100):
            break
        target *= mean / got
        dist = lengths.lognormal(target, cv, high=high)
    return dist


def keyed(row: Row, key: str) -> float | None:
    """A number the row's assumptions state as ``key=value`` (num_requests, samples_s, output_mean,
    max_num_tokens)."""
    m = re.search(rf"\b{key}\s*=\s*([0-9]+(?:\.[0-9]+)?)", row.assumptions)
    return float(m.group(1)) if m else None


def _num_requests(row: Row, default: int) -> int:
    n = keyed(row, "num_requests") or keyed(row, "num_prompts")
    return int(n) if n else default


# --- Predicting one row ------------------------------------------------------------------------

def predict(row: Row, datasets: dict | None = None, seed: int = 0) -> float:
    """The simulator's value of the row's metric and statistic, for the whole system."""
    datasets = load_datasets() if datasets is None else datasets
    setup = setup_for(row)
    inp, out = length_of(row, "input", datasets), length_of(row, "output", datasets)
    k = row.instances
    if row.scenario in ("server", "interactive") and row.metric in THROUGHPUT:
        rate = k * _server_rate(setup, inp, out, mlperf_limits(row), seed)
        return _throughput(row, rate * out.mean, rate, inp.mean)
    result = _run(row, setup, inp, out, k, seed)
    if row.metric in THROUGHPUT:
        makespan = float(result.finish.max() - result.arrival.min())
        rate = k * len(result) / makespan
        return _throughput(row, k * float(result.output_len.sum()) / makespan, rate,
                           float(result.input_len.mean()))
    warmup = max(1, round(row.concurrency / k)) if row.scenario == "concurrency" else 0
    return _latency(row, result, warmup)


def _throughput(row: Row, output_tok_s: float, req_s: float, mean_input: float) -> float:
    if row.metric == "output_tok_s":
        return output_tok_s
    if row.metric == "output_tok_s_per_gpu":
        return output_tok_s / row.num_gpus
    if row.metric == "total_tok_s":
        return output_tok_s + req_s * mean_input
    return req_s                                     # req_s, samples_s


def _run(row: Row, setup, inp, out, k: int, seed: int):
    """One instance's share of the row's workload."""
    if row.scenario == "offline":
        n = max(1, _num_requests(row, k * max(OFFLINE_REQUESTS, 16 * setup.max_num_seqs)) // k)
        result = run(setup, workload.offline(n, inp, out, seed=seed))
        if row.source.startswith("mlperf"):
            # LoadGen's Offline query holds min_duration x 1.1 x the expected rate's samples (at
            # least its min_query_count): the simulator's own rate stands for the expected one, so
            # the run's start and drain weigh what they weigh in the benchmark's run
            rate = len(result) / float(result.finish.max() - result.arrival.min())
            mlperf_n = max(math.ceil(MLPERF_OFFLINE_S * 1.1 * rate), math.ceil(MLPERF_OFFLINE_MIN_SAMPLES / k))
            if mlperf_n > n:
                result = run(setup, workload.offline(mlperf_n, inp, out, seed=seed))
        return result
    if row.scenario == "concurrency":
        clients = max(1, round(row.concurrency / k))
        return run(setup, workload.closed_loop(clients, max(CLOSED_LOOP_ROUNDS * clients, 64), inp, out, seed=seed))
    if row.scenario == "rate":
        n = max(200, _num_requests(row, RATE_REQUESTS) // k)
        return run(setup, workload.poisson(row.concurrency / k, n, inp, out, seed=seed))
    rate = published_rate(row) / k          # server/interactive latency: at the published rate
    return run(setup, workload.poisson(rate, max(400, int(rate * SERVER_DURATION_S)), inp, out, seed=seed))


def _latency(row: Row, result, warmup: int = 0) -> float:
    """The row's statistic over the requests after the first ``warmup`` (arrival order)."""
    keep = np.arange(len(result)) >= warmup
    values = {"ttft_s": result.ttft, "tpot_s": result.tpot, "e2e_s": result.e2e}
    if row.metric == "itl_s":
        if row.statistic == "mean":               # benchmark tools average each request's gaps
            return float(result.tpot[keep & (result.output_len > 1)].mean())
        return _itl(result)[row.statistic]
    v = values[row.metric][keep]
    if row.metric == "tpot_s":
        v = v[result.output_len[keep] > 1]
    if row.statistic == "mean":
        return float(v.mean())
    q = {"median": 50, "value": 50, "p90": 90, "p99": 99}[row.statistic]
    return float(np.percentile(v, q))


def _itl(result) -> dict:
    """Percentiles of every gap between two output tokens (each decode step is one gap per decoder)."""
    steps = result.steps
    return {s: percentile(steps.duration, q, weights=steps.decoders)
            for s, q in (("median", 50), ("value", 50), ("p90", 90), ("p99", 99))}


def published_rate(row: Row) -> float:
    """Requests/s the whole system ran at in an MLPerf server row (``samples_s=`` in its assumptions)."""
    rate = keyed(row, "samples_s")
    if rate is None:
        raise ValueError(f"{row.id}: a server latency row needs samples_s=... (the run's samples/s)")
    return rate


def _server_rate(setup, inp, out, limits, seed: int, rel_tol: float = 0.01) -> float:
    """The largest Poisson rate (req/s, one instance) with p99 TTFT and p99 TPOT each within
    ``limits`` (MLPerf LoadGen checks each percentile on its own): ``sim.capacity.max_rate``'s
    steady-state search, the one ``plan`` uses, with ``criterion="each"``."""
    ttft_limit, tpot_limit = limits
    return capacity.max_rate(setup, (inp, out), ttft_limit, tpot_limit, criterion="each", seed=seed,
                             rel_tol=rel_tol)


# --- Scoring -----------------------------------------------------------------------------------

def saturated(row: Row) -> bool:
    """A latency row of an MLPerf server/interactive run: measured at the system's saturation."""
    return row.scenario in ("server", "interactive") and row.metric not in THROUGHPUT


@dataclass(frozen=True)
class Scored:
    row: Row
    predicted: float

    @property
    def error(self) -> float:
        """Signed relative error, predicted / published - 1."""
        return self.predicted / self.row.value - 1


def mape(errors) -> float:
    errors = list(errors)
    if not errors:
        raise ValueError("no rows")
    return sum(abs(e) for e in errors) / len(errors)


def bias(errors) -> float:
    errors = list(errors)
    if not errors:
        raise ValueError("no rows")
    return sum(errors) / len(errors)


def _figures(errors: list[float]) -> dict:
    return {"rows": len(errors), "mape": mape(errors), "bias": bias(errors)}


# --- The two constants fitted to the whole set, and the leave-one-source-out score ------------

# Host time per step, which no kernel table measures: a fixed part (BASE_OVERHEAD_S) and a part per
# decoding sequence (HOST_S_PER_SEQ: scheduling, sampling, output processing grow with the batch).
# The per-sequence grid stops near the only published measurement of it, vLLM's non-overlapped
# host work measured by Vidur (37.5 us per sequence, microsoft/vidur
# data/profiling/a100/cpu_overheads.csv): engines that overlap their host work pay less.
GRID_BASE_OVERHEAD_S = (1e-3, 2e-3, 3e-3, 5e-3)
GRID_HOST_S_PER_SEQ = (0.0, 10e-6, 20e-6, 30e-6)
GRID = tuple((b, h) for b in GRID_BASE_OVERHEAD_S for h in GRID_HOST_S_PER_SEQ)


def evaluate_with(rows: list[Row], datasets: dict, value: tuple, workers: int = 1,
                  admission: bool | None = None, what_if: tuple | None = None) -> list[Scored]:
    """Every row's prediction with ``(sim.presets.BASE_OVERHEAD_S, sim.presets.HOST_S_PER_SEQ)``
    set to ``value`` (``ADMISSION`` to ``admission``, ``WHAT_IF`` to ``what_if``; default the
    module's), on ``workers``
    local processes (``sim.executors.map_jobs``; results in the rows' order)."""
    admission = ADMISSION if admission is None else bool(admission)
    what_if = WHAT_IF if what_if is None else tuple(what_if)
    jobs = [(row, datasets, tuple(value), admission, what_if) for row in rows]
    return [Scored(row, p) for row, p in zip(rows, map_jobs(_predict_with, jobs, workers=workers))]


def _predict_with(job) -> float:
    global ADMISSION, WHAT_IF
    row, datasets, (base_overhead_s, host_s_per_seq), admission, what_if = job
    saved = presets.BASE_OVERHEAD_S, presets.HOST_S_PER_SEQ, ADMISSION, WHAT_IF
    presets.BASE_OVERHEAD_S, presets.HOST_S_PER_SEQ = base_overhead_s, host_s_per_seq
    ADMISSION, WHAT_IF = admission, what_if
    try:
        return predict(row, datasets)
    finally:
        presets.BASE_OVERHEAD_S, presets.HOST_S_PER_SEQ, ADMISSION, WHAT_IF = saved


def best_value(scored_by_value: dict[tuple, list[Scored]], keep=lambda row: True) -> tuple:
    """The grid value (base, per sequence) with the lowest MAPE over the unsaturated rows ``keep``
    accepts (ties: the smaller values)."""
    return min(scored_by_value, key=lambda v: (
        mape(s.error for s in scored_by_value[v] if keep(s.row) and not saturated(s.row)), v))


def leave_one_source_out(scored_by_value: dict[tuple, list[Scored]]) -> dict:
    """For each source: the constants chosen without its rows, and its rows' errors with them.

    Returns {"sources": {source: {"value", "rows", "mape", "bias"}}, "all": {"rows", "mape", "bias"},
    "errors": {row id: its error at its source's value}}.
    """
    any_value = next(iter(scored_by_value))
    sources = sorted({s.row.source for s in scored_by_value[any_value] if not saturated(s.row)})
    out, pooled, by_row = {}, [], {}
    for source in sources:
        value = best_value(scored_by_value, keep=lambda row: row.source != source)
        mine = [s for s in scored_by_value[value] if s.row.source == source and not saturated(s.row)]
        errors = [s.error for s in mine]
        by_row.update((s.row.id, s.error) for s in mine)
        pooled.extend(errors)
        out[source] = {"value": value, **_figures(errors)}
    return {"sources": out, "all": _figures(pooled), "errors": by_row}
