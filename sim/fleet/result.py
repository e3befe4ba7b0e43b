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
    second_token      time of each request's second token (NaN for one-token outputs and failures)
    ``steps`` is every instance's step log concatenated. ``summarize``'s ITL covers the fleet
    (``itl_samples``): every step's duration once per decoding request, except that in a PD fleet a
    request's first gap (second token - first token) spans the KV transfer and the wait for
    admission on the decode instance, so it replaces the duration of its first decode step.
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

    @cached_property
    def second_token(self) -> np.ndarray:
        """A running request gets one token per step of its instance, so its token k comes from the
        step ``out - k`` steps before the one it finished in (the step ending at ``finish``)."""
        second = np.full(len(self), np.nan)
        for i, res in enumerate(self.instance_results):
            mine = np.flatnonzero((self.instance == i) & ~np.isnan(self.finish) & (self.output_len > 1))
            if not len(mine):
                continue
            steps = res.steps
            start = steps.start
            last = np.searchsorted(start, self.finish[mine], side="left") - 1     # the finishing step
            step2 = last - (self.output_len[mine] - 2)
            ends = np.append(start[1:], np.nan)[step2]                            # next step's start ...
            second[mine] = np.where(step2 == last, self.finish[mine], ends)       # ... or the finish
        return second

    def itl_samples(self) -> tuple[np.ndarray, np.ndarray]:
        steps = self.steps
        if not self.disaggregated:
            return steps.duration, steps.decoders
        counts = steps.decoders.copy()
        moved = ~np.isnan(self.second_token) & (self.prefill_instance != self.instance)
        offset = np.cumsum([0] + [len(r.steps) for r in self.instance_results])
        for g in np.flatnonzero(moved).tolist():
            i = int(self.instance[g])
            start = self.instance_results[i].steps.start
            first_decode = int(np.searchsorted(start, self.second_token[g], side="left")) - 1
            counts[offset[i] + first_decode] -= 1
        gaps = (self.second_token - self.first_token)[moved]
        return (np.concatenate([steps.duration, gaps]),
                np.concatenate([counts, np.ones(len(gaps), dtype=counts.dtype)]))

    def _all_steps(self) -> StepLog:
        logs = [r.steps for r in self.instance_results]
        cat = lambda name: np.concatenate([getattr(s, name) for s in logs]) if logs else np.zeros(0)
        return StepLog(duration=cat("duration"), tokens=cat("tokens"), context=cat("context"),
                       decoders=cat("decoders"), pairs=cat("pairs"), start=lambda: cat("start"))
