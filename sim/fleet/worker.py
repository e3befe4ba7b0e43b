"""A worker: one instance in the fleet, with what the gateway knows about it and its lifecycle.

States: "starting" (loading weights, not routable), "up" (routable), "draining" (finishing its
requests, not routable), "failed" (stopped; routable until the health check notices), "removed".

Workers are driven lazily. A submission is buffered (and handed to the instance in one
``submit_many`` at the next look); the instance is advanced only when something reads its state
(a router, the autoscaler, a failure), to the fleet clock's time ``clock.now``: every step starting
before it. Nothing else depends on a colocated or decode instance, so a run whose router reads no
state advances each instance once, at the end, exactly as the single-instance engine would.
The load figures are read at ``clock.now`` as the instance reports them (``Instance``'s public
accessors; a step in progress counts as not finished).

If the engine offers ``Instance.quiet_until()`` -- a time T such that, with nothing more
submitted, its accessors asked at any t < T answer the same whether or not ``advance(t)`` runs
first -- a read before T skips the advance; ``advance`` gives the same steps however it is cut, so
the run is the same bit for bit. Without it every read advances. (``fast``, the compiled fleet,
does the same on arrays for the fleets it takes.)
"""

from __future__ import annotations

import math

from sim.engine import Instance

_QUIET = hasattr(Instance, "quiet_until")      # the engine hook, when the engine has it


class Clock:
    """The fleet's current time, shared with the workers so that their state reads are 'as of now'."""

    __slots__ = ("now",)

    def __init__(self):
        self.now = 0.0


class Worker:
    __slots__ = ("id", "pool", "setup", "gpus", "instance", "clock", "next_t", "state", "in_transit",
                 "lost", "local", "arrivals", "started_s", "ready_s", "stopped_s", "failed_s", "detected",
                 "drain_s", "sent_after_failure", "_buffer", "_quiet", "buffered")

    def __init__(self, id: int, pool: str, setup, gpus: int, clock: Clock, started_s: float,
                 on_finish=None, state: str = "up", expected_requests: int | None = None):
        self.id, self.pool, self.setup, self.gpus, self.clock = id, pool, setup, gpus, clock
        self.instance = Instance(setup, on_finish=on_finish, expected_requests=expected_requests)
        self.next_t = math.inf        # the instance's next step start (cached; valid when the buffer is empty)
        self.state = state
        self.in_transit = 0           # routed here, KV still on the link (decode pool)
        self.lost: list[int] = []     # requests lost here, to retry when the failure is detected
        self.sent_after_failure = 0   # routed here after it failed, before the health check noticed
        self.local: list[int] = []    # local id on the instance -> fleet request id
        self.arrivals: list[float] = []   # local id -> arrival on this instance
        self.started_s = started_s    # GPUs held from here (billing)
        self.ready_s = started_s if state == "up" else math.nan
        self.stopped_s = math.nan
        self.failed_s = math.nan
        self.detected = False
        self.drain_s = math.nan
        self._buffer: tuple[list, list, list, list] | None = None   # submissions not yet handed over
        self._quiet = -math.inf       # the figures cannot change before this time (nothing submitted since)
        self.buffered = True          # buffer submissions (False: hand each over at once, for a worker read
                                      # at every arrival, where a buffer of one is pure overhead)

    # --- what the gateway sees -----------------------------------------------------------------

    def _now(self) -> float:
        """The time the instance's figures are read at (it is brought there first): now, or its
        failure instant once failed (a dead instance answers nothing more; its last step, cut by
        the failure, never completes)."""
        if self.state == "failed":
            return min(self.clock.now, self.failed_s)
        t = self.clock.now
        self._look(t)
        return t

    def _look(self, t: float) -> None:
        """Make the figures those of time t: advance, unless nothing can have changed since."""
        if self._buffer is not None:
            self.flush()
        if self.next_t < t and not t < self._quiet:
            self.instance.advance(t)
            self.next_t = self.instance.next_time()
            if _QUIET:
                self._quiet = self.instance.quiet_until()

    @property
    def outstanding(self) -> int:
        """Requests sent here and not yet answered (queued, running, with their KV in transit, or
        sent after it failed, until the health check notices)."""
        # _now() and _look() written out: least_requests reads every worker at every arrival
        t = self.clock.now
        if self.state == "failed":
            t = min(t, self.failed_s)
        else:
            if self._buffer is not None:
                self.flush()
            if self.next_t < t and not t < self._quiet:
                self.instance.advance(t)
                self.next_t = self.instance.next_time()
                if _QUIET:
                    self._quiet = self.instance.quiet_until()
        return self.instance.outstanding(t) + self.in_transit + self.sent_after_failure

    @property
    def queue_len(self) -> int:
        self._now()
        return self.instance.queue_len()

    @property
    def running(self) -> int:
        return self.instance.running_at(self._now())

    @property
    def free_kv_tokens(self) -> int:
        return self.instance.free_kv_tokens(self._now())

    def cached_prefix_tokens(self, request) -> int:
        """Prompt tokens of ``request`` this instance's prefix cache holds now (0 without one)."""
        self._now()
        return self.instance.cached_prefix_tokens(request.prefix, request.input_len)

    def queue_age(self) -> float:
        """Seconds the oldest request not yet admitted has waited (0 when none waits)."""
        t = self._now()
        waiting = self.instance.queue_len()
        if waiting:
            return max(0.0, t - self.arrivals[len(self.arrivals) - waiting])
        return 0.0

    # --- driving the instance --------------------------------------------------------------------

    def flush(self) -> None:
        """Hand the buffered submissions to the instance."""
        if self._buffer is not None:
            arrival, inp, out, prefix = self._buffer
            self._buffer = None
            if len(arrival) == 1:                 # (submit is the cheaper call for one)
                self.instance.submit(arrival[0], inp[0], out[0], prefix=prefix[0])
            else:
                self.instance.submit_many(arrival, inp, out, prefix=prefix)
            self.next_t = self.instance.next_time()
            self._quiet = -math.inf

    def bring_to(self, t: float) -> None:
        """Run the instance's steps that start before t (every one: its callbacks fire)."""
        if self._buffer is not None:
            self.flush()
        if self.next_t < t:
            self.instance.advance(t)
            self.next_t = self.instance.next_time()

    def finish(self) -> None:
        """Run every step left (the end of the fleet's run)."""
        self.flush()
        self.instance.advance()
        self.next_t = self.instance.next_time()

    def next_start(self) -> float:
        """When the instance's next step starts (inf when idle)."""
        self.flush()
        return self.next_t

    def submit(self, g: int, t: float, input_len: int, output_len: int, prefix=None) -> int:
        """Send fleet request g (arriving now, at t); returns its local id."""
        if not self.buffered:
            self.instance.submit(t, input_len, output_len, prefix=prefix)
            self.next_t = self.instance.next_time()
            self._quiet = -math.inf
            self.local.append(g)
            self.arrivals.append(t)
            return len(self.local) - 1
        if self._buffer is None:
            self._buffer = ([], [], [], [])
        arrival, inp, out, prefixes = self._buffer
        arrival.append(t)
        inp.append(input_len)
        out.append(output_len)
        prefixes.append(prefix)
        self.local.append(g)
        self.arrivals.append(t)
        return len(self.local) - 1

    def submit_prefilled(self, g: int, t: float, input_len: int, output_len: int) -> int:
        """A request whose prompt ran elsewhere (PD's decode side); returns its local id."""
        self.flush()
        lid = self.instance.submit(t, input_len, output_len, prefilled=True)
        self._quiet = -math.inf
        self.local.append(g)
        self.arrivals.append(t)
        self.next_t = self.instance.next_time()
        return lid

    def __repr__(self) -> str:
        return f"Worker({self.id}, {self.pool}, {self.state})"
