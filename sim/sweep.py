"""Sweep deployment options (GPU type, TP, dtypes, scheduler limits) and rank them by cost.

    rows = sweep("llama-3-70b", qps=200, input_len=2000, output_len=500, ttft_slo=2, tpot_slo=0.05)
    print(table(rows))

Each option is ``presets.instance(model, **option)`` sized with ``sim.plan``; options that do not
fit, lack a dtype, or meet the SLOs at no rate are kept with their reason (``feasible`` False) and
listed last. Options run in local processes (default; a pool when there are enough of them to pay
for it) or on a Ray cluster (``executor="ray"``, see ``sim.executors``): the rows are the same.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sim import presets
from sim.capacity import POISSON_REQUESTS, BracketError
from sim.executors import map_jobs
from sim.planning import PLAN_REL_TOL, plan

DEFAULT_GRID = {"gpu": sorted(presets.GPUS), "tp": [1, 2, 4, 8], "weight_dtype": ["bf16", "fp8"]}


@dataclass(frozen=True)
class Option:
    """One row of a sweep: the option's settings and its plan (None with a reason when infeasible)."""

    settings: dict
    feasible: bool
    gpus: int | None
    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None
    rate_per_instance: float | None
    bound: str | None
    reason: str = ""

    def as_dict(self) -> dict:
        return {**self.settings, "feasible": self.feasible, "gpus": self.gpus,
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
                "rate_per_instance": self.rate_per_instance, "bound": self.bound, "reason": self.reason}


def options(grid: dict | None = None) -> list[dict]:
    """Every combination of the grid's values (keys: ``gpu`` and any ``presets.instance`` keyword;
    a single value is a list of one). GPU names become their preset keys, each once."""
    grid = dict(DEFAULT_GRID if grid is None else grid)
    if "gpu" not in grid:
        raise ValueError("grid must have a 'gpu' key (a list of GPU names)")
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            grid[key] = [values]
    grid["gpu"] = list(dict.fromkeys(presets.gpu_key(g) for g in grid["gpu"]))
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def sweep(model: str, qps: float, input_len: int, output_len: int, ttft_slo: float, tpot_slo: float, *,
          grid: dict | None = None, gpu_hour_usd: dict | None = None, headroom: float = 1.3,
          num_requests: int | None = None, rel_tol: float = PLAN_REL_TOL, executor: str = "local",
          workers: int | None = None, address: str | None = None, progress=None) -> list[Option]:
    """Plan every option of ``grid`` for ``model``; return them cheapest first (infeasible last).

    The rate search is ``plan``'s, with its defaults (steady-state trials, ``rel_tol`` 0.1%), so a
    row's figures are those ``sim.plan``, ``python -m sim plan`` and the chapter panels give for the
    same option (tests/test_sweep.py checks it).
    ``gpu_hour_usd`` adds or replaces prices of ``presets.GPU_HOUR_USD`` (see ``presets.gpu_hour_usd``;
    a GPU with no price is a row with that reason). ``progress(done, total)`` is called after each
    option (``sim.progress.progress_bar`` draws it). ``executor``: "local" (default),
    ``workers`` processes (default: the CPU count; 1 runs in this process), or "ray", on the Ray
    cluster at ``address`` (default: a local Ray runtime, or this process's Ray connection).
    """
    model = presets.model_key(model)                      # fail early on an unknown name
    presets.gpu_hour_usd("h100-sxm", gpu_hour_usd)        # and on a malformed price list
    jobs = [(model, opt, qps, input_len, output_len, ttft_slo, tpot_slo, headroom, gpu_hour_usd,
             num_requests, rel_tol) for opt in options(grid)]
    rows = map_jobs(_one, jobs, executor=executor, workers=workers, address=address, progress=progress)
    return sorted(rows, key=lambda r: (not r.feasible, r.usd_per_hour if r.feasible else 0.0,
                                       r.gpus or 0, str(sorted(r.settings.items()))))


def table(rows: list[Option], limit: int | None = None) -> str:
    """The rows as a fixed-width text table (GPUs by their display names, as every command names them)."""
    head = ["gpu", "tp", "dtype", "gpus", "$/h", "$/1M out", "req/s/inst", "bound / reason"]
    lines = []
    for r in rows[:limit]:
        s = r.settings
        dtype = (s.get("weight_dtype", "bf16") + ("/" + s["kv_dtype"] if s.get("kv_dtype") else "")).upper()
        if r.feasible:
            lines.append([presets.gpu(s["gpu"]).name, str(s.get("tp", 1)), dtype, str(r.gpus), f"{r.usd_per_hour:,.0f}",
                          f"{r.usd_per_million_output_tokens:.2f}", f"{r.rate_per_instance:.2f}", r.bound])
        else:
            lines.append([presets.gpu(s["gpu"]).name, str(s.get("tp", 1)), dtype, "-", "-", "-", "-", r.reason[:70]])
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    fmt = lambda row: "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip()   # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in lines])


def _one(job) -> Option:
    model, opt, qps, input_len, output_len, ttft_slo, tpot_slo, headroom, prices, num_requests, rel_tol = job
    settings = dict(opt)
    kwargs = {k: v for k, v in opt.items() if k != "gpu"}
    try:
        setup = presets.instance(model, opt["gpu"], **kwargs)
        price = presets.gpu_hour_usd(opt["gpu"], prices)
        p = plan(qps, setup, input_len, output_len, ttft_slo, tpot_slo, gpus_per_instance=kwargs.get("tp", 1),
                 headroom=headroom, gpu_hour_usd=price, num_requests=num_requests, rel_tol=rel_tol)
    except (ValueError, BracketError) as e:
        return Option(settings, False, None, None, None, None, None, str(e))
    return Option(settings, True, p.gpus, p.usd_per_hour, p.usd_per_million_output_tokens,
                  p.rate_per_instance, p.bound)
