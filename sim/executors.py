"""Run independent jobs ``fn(job)`` in this process, in local processes, or on a Ray cluster.

    results = map_jobs(fn, jobs)                                   # local processes
    results = map_jobs(fn, jobs, executor="ray", address="auto")   # a running Ray cluster

Results come back in the order of ``jobs`` whatever the executor, so a caller gets the same list
from each. ``fn`` must be a module-level function of ``sim`` (workers import it by name). Ray is
optional (``pip install 'llm-serving-course[ray]'``) and imported only when asked for; the
cluster's nodes need numpy, and get this ``sim`` package shipped with the job, so every option is
computed by the same simulator code as on this machine.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

EXECUTORS = ("local", "ray")
PARALLEL_MIN_JOBS = 8          # fewer local jobs run in this process: a pool would cost more than it saves


def map_jobs(fn, jobs, *, executor: str = "local", workers: int | None = None,
             address: str | None = None, progress=None) -> list:
    """``[fn(job) for job in jobs]``, computed by ``executor``; ``progress(done, total)`` after each.

    local  ``workers`` processes (default: the CPU count; 1 runs in this process; so do fewer
           than PARALLEL_MIN_JOBS jobs).
    ray    one Ray task per job. Uses this process's Ray connection if ``ray.init`` was already
           called; otherwise connects to ``address`` ("auto", "ray://head:10001", ...; None starts
           a local Ray runtime or uses RAY_ADDRESS) and disconnects when done.
    """
    jobs = list(jobs)
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if executor == "ray":
        if workers is not None:
            raise ValueError("workers applies to executor='local' only (Ray schedules on the cluster's CPUs)")
        return _on_ray(fn, jobs, address, progress)
    if address is not None:
        raise ValueError("address applies to executor='ray' only")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    return _local(fn, jobs, (os.cpu_count() or 1) if workers is None else workers, progress)


def _local(fn, jobs, workers, progress) -> list:
    results = []
    if workers > 1 and len(jobs) >= PARALLEL_MIN_JOBS:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(fn, jobs, chunksize=max(1, len(jobs) // (workers * 8))):
                results.append(result)
                if progress:
                    progress(len(results), len(jobs))
    else:
        for job in jobs:
            results.append(fn(job))
            if progress:
                progress(len(results), len(jobs))
    return results


class RayNotInstalled(ImportError):
    """``executor="ray"`` was asked for where Ray is not installed."""


def import_ray():
    """The ``ray`` module, or ``RayNotInstalled`` saying how to install it."""
    hint = "pip install 'llm-serving-course[ray]' (or pip install ray)"
    try:
        import ray
    except ImportError as e:
        raise RayNotInstalled(f"executor='ray' needs Ray, which is not installed here: {hint}") from e
    if not hasattr(ray, "remote"):           # e.g. a folder named ray (Ray's own /tmp/ray) on sys.path
        where = getattr(ray, "__file__", None) or list(getattr(ray, "__path__", []))
        raise RayNotInstalled(f"executor='ray' needs Ray, but 'import ray' found {where}, which is not "
                              f"Ray: run from another folder, or {hint}")
    return ray


def _on_ray(fn, jobs, address, progress) -> list:
    ray = import_ray()
    connect = not ray.is_initialized()
    if not connect and address is not None:
        raise ValueError("address: this process is already connected to Ray (ray.init was called); "
                         "pass address=None to use that connection")
    if connect:
        sim_dir = str(Path(__file__).resolve().parent)
        ray.init(address=address, runtime_env={"py_modules": [sim_dir]}, logging_level="WARNING",
                 log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(fn)
        pending = {task.remote(job): i for i, job in enumerate(jobs)}
        results = [None] * len(jobs)
        done = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                results[pending.pop(ref)] = ray.get(ref)
                done += 1
                if progress:
                    progress(done, len(jobs))
        return results
    finally:
        if connect:
            ray.shutdown()
