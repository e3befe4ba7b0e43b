"""What a fleet run returns: the per-request arrays ``summarize`` uses, plus where each request ran,
per-instance step logs, an event log and the instances' lifetimes."""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from sim.result import SimResult, StepLog


class WorkerRecord(NamedTuple):
    """One instance's life: GPUs held from ``started_s`` to ``stopped_s`` (billing), serving from
    ``ready_s``; ``failed_s`` is NaN unless it failed; ``served`` counts the requests it finished
    (the decode side for PD)."""

    id: int
    pool: str
    gpus: int
    started_s: float
    ready_s: float
    stopped_s: float
    failed_s: float
    state: str
    served: int

    @property
    def gpu_hours(self) -> float:
        return self.gpus * (self.stopped_s - self.started_s) / 3600


class FleetResult(SimResult):
    """A ``SimResult`` over the whole fleet (requests in arrival order), plus:

    instance          id of the instance that finished each request (decode side for PD), -1 if failed
    prefill_instance  id of the instance that ran its prompt (equal to ``instance`` when colocated)
    error             None for a finished request, else the reason: "instance_failed" (lost, no
                      retry left) or "no_instance" (nothing routable at that moment)
    retries           how many times each request was routed again after a failure
    transfer_s        KV transfer time of each request's last attempt (NaN when none)
    workers           a ``WorkerRecord`` per instance (id order)
    instance_results  each instance's own ``SimResult`` (every attempt it took, its step log)
    events            (time, kind, request, instance, detail) tuples, in the order they happened:
                      route, transfer, decode, fail, detect, retry, error, scale_up, ready, drain,
                      cancel, remove
    timeline          (time, instances up, instances starting) at every change
    ``steps`` is every instance's step log concatenated, so ``summarize``'s ITL covers the fleet
    (ITL is a step's duration: the gap that a KV transfer adds shows in TPOT, not in ITL).
    """

    def __init__(self, arrival, first_token, finish, input_len, output_len, *, instance, prefill_instance,
                 error, retries, transfer_s, workers, worker_results, events, timeline, end_s,
                 gpu_hour_usd, disaggregated):
        super().__init__(arrival, first_token, finish, input_len, output_len, step_runs=self._all_steps)
        self.instance = np.asarray(instance, dtype=np.int64)
        self.prefill_instance = np.asarray(prefill_instance, dtype=np.int64)
        self.error = np.asarray(error, dtype=object)
        self.retries = np.asarray(retries, dtype=np.int64)
        self.transfer_s = np.asarray(transfer_s, dtype=float)
        self.workers = list(workers)
        self.instance_results = list(worker_results)
        self.events = events
        self.timeline = timeline
        self.end_s = end_s
        self.gpu_hour_usd = gpu_hour_usd
        self.disaggregated = disaggregated

    def __repr__(self) -> str:
        return (f"FleetResult({len(self)} requests, {len(self.workers)} instances, "
                f"{int(self.failed.sum())} failed)")

    @cached_property
    def failed(self) -> np.ndarray:
        """Mask of the requests that ended with an error instead of finishing."""
        return np.array([e is not None for e in self.error], dtype=bool)

    def instance_steps(self, i: int) -> StepLog:
        """Instance ``i``'s step log."""
        return self.instance_results[i].steps

    @property
    def gpu_hours(self) -> float:
        return sum(w.gpu_hours for w in self.workers)

    @property
    def cost_usd(self) -> float:
        return self.gpu_hours * self.gpu_hour_usd

    def _all_steps(self) -> StepLog:
        logs = [r.steps for r in self.instance_results]
        cat = lambda name: np.concatenate([getattr(s, name) for s in logs]) if logs else np.zeros(0)
        return StepLog(duration=cat("duration"), tokens=cat("tokens"), context=cat("context"),
                       decoders=cat("decoders"), pairs=cat("pairs"), start=lambda: cat("start"))
