"""``Workload``: the requests of one run (arrival times, lengths, prefix identity), as a plain record.

Its own module so that every builder of workloads (``sim.workload``'s arrival processes,
``sim.sessions``' chat and shared-prompt mixes, ``sim.fleet.load``'s time-varying rates) can make one
without importing the others; ``sim.workload.Workload`` is the name to use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numbers

import numpy as np


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests for one run. ``arrival`` is None for a closed loop (``concurrency`` clients)."""

    kind: str
    arrival: tuple | None
    input_len: tuple
    output_len: tuple
    concurrency: int | None = None
    think_s: float = 0.0
    prefix: tuple | None = None       # per request: prefix identity for a prefix cache (sim.kv), or None
    follows: tuple | None = None      # multi-turn: index of the turn each request follows (-1: none)
    session: tuple | None = None      # per request: its session (what session_affinity hashes)
    priority: tuple | None = None     # per request: an int, smaller = more urgent (vLLM's convention),
                                      # for Setup.kv=Paged(policy="priority"); None: all 0

    def __post_init__(self):
        if self.priority is None:
            return
        p = self.priority
        if isinstance(p, (str, bytes)) or not hasattr(p, "__len__") or len(p) != len(self.input_len):
            n = len(p) if hasattr(p, "__len__") else type(p).__name__
            raise ValueError(f"Workload.priority must give one int per request ({len(self.input_len)}), got {n}")
        for i, v in enumerate(p):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"Workload.priority must hold ints (smaller = more urgent), got {v!r} "
                                 f"for request {i}")
        object.__setattr__(self, "priority", tuple(int(v) for v in p))

    def __len__(self) -> int:
        return len(self.input_len)

    @property
    def mean_input_len(self) -> float:
        return float(np.mean(self.input_len))

    @property
    def mean_output_len(self) -> float:
        return float(np.mean(self.output_len))

    def __repr__(self) -> str:
        what = f"{self.concurrency} clients" if self.arrival is None else f"until {self.arrival[-1]:.4g} s"
        return (f"Workload({self.kind}, {len(self)} requests, {what}, mean {self.mean_input_len:.0f} in / "
                f"{self.mean_output_len:.0f} out)")
