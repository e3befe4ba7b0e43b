"""What one fleet run holds: the requests, where each request's current attempt lives, the workers
by pool, the event queue and the event log. The handlers (``delivery``, ``transfer``, ``failures``,
``scaling``) read and change it; ``assemble`` turns it into a ``FleetResult``."""

from __future__ import annotations

import math

import numpy as np

from sim import engine
from sim.fleet.events import EventQueue
from sim.fleet.routers import FleetRequest, Router, make_router
from sim.fleet.spec import Fleet
from sim.fleet.worker import Clock, Worker
from sim.workload import Workload


class RunState:
    def __init__(self, fleet: Fleet, workload: Workload, sessions: list[int]):
        self.fleet = fleet
        # (float / int per request, through numpy: the same values, a fraction of the time)
        self.arrival = np.asarray(workload.arrival, dtype=float).tolist()
        self.inp = np.asarray(workload.input_len, dtype=np.int64).tolist()
        self.out = np.asarray(workload.output_len, dtype=np.int64).tolist()
        self.sessions = sessions
        self.prefix = list(workload.prefix) if workload.prefix is not None else [None] * len(self.inp)
        n = self.n = len(self.arrival)
        self.router: Router = make_router(fleet.router, fleet.seed)
        self.has_finish_hook = type(self.router).on_request_complete is not Router.on_request_complete
        self.clock = Clock()
        self.queue = EventQueue(self.arrival)
        self.events: list[tuple] = []      # the log: (time, kind, request, instance, detail)
        self.timeline: list[tuple] = []    # (time, up, starting) at every change
        # where each request's current attempt lives: first token from (fw, fl), finish from (dw, dl)
        self.fw, self.fl = [-1] * n, [-1] * n
        self.dw, self.dl = [-1] * n, [-1] * n
        self.pending = [-1] * n            # PD: decode worker chosen, KV not yet there
        self.attempt = [0] * n             # bumped when an attempt is lost: its pending events go stale
        self.retries = [0] * n
        self.error: list[str | None] = [None] * n
        self.xfer = [math.nan] * n
        self.workers: list[Worker] = []
        # Whether this run uses the compiled loops: the engine's rule (COMPILE_MIN_REQUESTS) asked
        # once, for the run's requests; its instances are then told they add none (expected 0).
        self.compiled = engine._compiled_loops(n) is not None
        self.routable: dict[str, list[Worker]] = {}

    def request(self, g: int) -> FleetRequest:
        return FleetRequest(g, self.arrival[g], self.inp[g], self.out[g], self.sessions[g], self.prefix[g])

    def log(self, t: float, kind: str, g: int = -1, wid: int = -1, detail=None) -> None:
        self.events.append((t, kind, g, wid, detail))

    def add_worker(self, pool_name: str, pool, t: float, state: str, on_finish=None) -> Worker:
        w = Worker(len(self.workers), pool_name, pool.setup, pool.gpus_per_instance, self.clock, t,
                   on_finish, state, expected_requests=0)
        w.buffered = not self.router.needs_state       # a router that reads state reads every submission
        self.workers.append(w)
        return w

    def refresh_routable(self) -> None:
        """The routable workers per pool (up, or failed and not yet noticed), in id order; a change
        in instances up or starting goes on the timeline."""
        by_pool: dict[str, list[Worker]] = {name: [] for name in self.fleet.pool_names}
        for w in self.workers:
            if w.state == "up" or (w.state == "failed" and not w.detected):
                by_pool[w.pool].append(w)
        self.routable = by_pool
        up = sum(w.state == "up" for w in self.workers)
        starting = sum(w.state == "starting" for w in self.workers)
        if not self.timeline or self.timeline[-1][1:] != (up, starting):
            self.timeline.append((self.clock.now, up, starting))

    def lose(self, g: int) -> None:
        """The current attempt of request g is gone: pending events for it become stale."""
        self.attempt[g] += 1
        if self.pending[g] >= 0:
            self.workers[self.pending[g]].in_transit -= 1
            self.pending[g] = -1
        self.fw[g] = self.fl[g] = self.dw[g] = self.dl[g] = -1
