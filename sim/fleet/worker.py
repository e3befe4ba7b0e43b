"""A worker: one instance in the fleet, with what the gateway knows about it and its lifecycle.

States: "starting" (loading weights, not routable), "up" (routable), "draining" (finishing its
requests, not routable), "failed" (stopped; routable until the health check notices), "removed".
The load figures are read at the fleet clock's time (``clock.now``), as the instance reports them.
"""

from __future__ import annotations

import math

from sim.engine import Instance


class Clock:
    """The fleet's current time, shared with the workers so that their state reads are 'as of now'."""

    __slots__ = ("now",)

    def __init__(self):
        self.now = 0.0


class Worker:
    __slots__ = ("id", "pool", "setup", "gpus", "instance", "clock", "next_t", "state", "in_transit",
                 "lost", "local", "started_s", "ready_s", "stopped_s", "failed_s", "detected", "drain_s",
                 "sent_after_failure")

    def __init__(self, id: int, pool: str, setup, gpus: int, clock: Clock, started_s: float,
                 on_finish=None, state: str = "up"):
        self.id, self.pool, self.setup, self.gpus, self.clock = id, pool, setup, gpus, clock
        self.instance = Instance(setup, on_finish=on_finish)
        self.next_t = math.inf        # the instance's next step start (cached)
        self.state = state
        self.in_transit = 0           # routed here, KV still on the link (decode pool)
        self.lost: list[int] = []     # requests lost here, to retry when the failure is detected
        self.sent_after_failure = 0   # routed here after it failed, before the health check noticed
        self.local: list[int] = []    # local id on the instance -> fleet request id
        self.started_s = started_s    # GPUs held from here (billing)
        self.ready_s = started_s if state == "up" else math.nan
        self.stopped_s = math.nan
        self.failed_s = math.nan
        self.detected = False
        self.drain_s = math.nan

    # --- what the gateway sees -----------------------------------------------------------------

    def _now(self) -> float:
        """The time the instance's figures are read at: now, or its failure instant once failed (a
        dead instance answers nothing more; its last step, cut by the failure, never completes)."""
        t = self.clock.now
        return min(t, self.failed_s) if self.state == "failed" else t

    @property
    def outstanding(self) -> int:
        """Requests sent here and not yet answered (queued, running, with their KV in transit, or
        sent after it failed, until the health check notices)."""
        inst = self.instance
        return (len(inst.arr) - inst.done + (inst.last_done if inst.now > self._now() else 0)
                + self.in_transit + self.sent_after_failure)

    @property
    def queue_len(self) -> int:
        return self.instance.queue_len()

    @property
    def running(self) -> int:
        return self.instance.running_at(self._now())

    @property
    def free_kv_tokens(self) -> int:
        return self.instance.free_kv_tokens(self._now())

    def cached_prefix_tokens(self, request) -> int:
        """Prompt tokens of ``request`` this instance's prefix cache holds now (0 without one)."""
        return self.instance.cached_prefix_tokens(request.prefix, request.input_len)

    def queue_age(self) -> float:
        """Seconds the oldest request not yet admitted has waited (0 when none waits)."""
        inst = self.instance
        if inst.admitted < len(inst.arr):
            return max(0.0, self._now() - inst.arr[inst.admitted])
        return 0.0

    # --- driving the instance --------------------------------------------------------------------

    def bring_to(self, t: float) -> None:
        """Run the instance's steps that start before t."""
        if self.next_t < t:
            self.instance.advance(t)
            self.next_t = self.instance.next_time()

    def submit(self, g: int, t: float, input_len: int, output_len: int, prefilled: bool = False,
               prefix=None) -> int:
        self.bring_to(t)
        lid = self.instance.submit(t, input_len, output_len, prefilled=prefilled, prefix=prefix)
        self.local.append(g)
        self.next_t = self.instance.next_time()
        return lid

    def __repr__(self) -> str:
        return f"Worker({self.id}, {self.pool}, {self.state})"
