"""The fleet clock: one event heap for the whole fleet, instances stepped in turn.

Events are keyed ``(time, priority, key, sequence)``, so ties always break the same way (as in
SimPy's core): at one instant a failure comes first, then its detection, a ready instance, an
autoscaler tick, a finished KV transfer, an arrival (arrivals are merged from the workload's sorted
list rather than pushed), and last a prefill instance's step. KV transfers landing at one instant
are admitted in request order (their key is the request id), whichever prefill instance sent them. An arrival at the instant a step starts
joins that step, exactly as in the single-instance engine (``arrival <= now``).

How instances are driven:

- colocated and decode instances are advanced lazily: before a request is submitted to one, or
  before a router that reads load looks at them, each is advanced to the current time (every step
  starting before it). Nothing else depends on them, so quiet runs are still skipped in bulk, cut
  only at the instants the fleet looks.
- prefill instances (PD) are stepped by events, one step per event, because each finished prompt
  starts a KV transfer that must enter the heap before anything later happens.

PD's choices: on a prefill instance a request is the prompt and its first token (input_len, 1),
so it reserves input_len + 1 tokens of KV and frees them when the prompt completes. The KV is
pushed to the decode side as it is produced (layer by layer, as Mooncake/NIXL-style engines do),
and a prefill instance, compute-bound, is rarely short of KV; holding the blocks until the
transfer ends would matter only then. The transfer starts at the prompt's end and takes
input_len x kv_bytes_per_token / link bandwidth + latency; the decode instance then admits the
request like any other (FIFO, whole reservation input + output), as a decoder.

A request's attempt is lost when its instance fails before finishing it (a prefill instance:
before the prompt completes); the health check notices ``detect_s`` later and the request is routed
again (its TTFT still counts from the original arrival), or recorded as failed.
"""

from __future__ import annotations

import heapq
import math
import random

import numpy as np

from sim.fleet.autoscale import Signal
from sim.fleet.result import FleetResult, WorkerRecord
from sim.fleet.routers import FleetRequest, Router, make_router
from sim.fleet.spec import Fleet
from sim.fleet.worker import Clock, Worker
from sim.validate import check_lengths_fit
from sim.workload import Workload

FAIL, DETECT, READY, SCALE, TRANSFER, ARRIVAL, STEP = range(7)


def run_fleet(fleet: Fleet, workload: Workload, *, sessions=None) -> FleetResult:
    """Run an open-loop workload through a fleet. ``sessions`` (one int per request, default the
    request's index) is what ``session_affinity`` hashes."""
    if not isinstance(fleet, Fleet):
        raise ValueError(f"fleet must be a sim.fleet.Fleet, got {type(fleet).__name__}")
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a sim.workload.Workload, got {type(workload).__name__}")
    if workload.arrival is None:
        raise ValueError("workload: a fleet runs open-loop workloads (arrival times), not a closed loop")
    n = len(workload)
    if sessions is None:
        sessions = workload.session if workload.session is not None else range(n)
    elif len(sessions) != n:
        raise ValueError(f"sessions must hold one id per request ({n}), got {len(sessions)}")
    if fleet.disaggregated:
        check_lengths_fit(fleet.prefill.setup, np.asarray(workload.input_len), 1)
        check_lengths_fit(fleet.decode.setup, workload.input_len, workload.output_len)
    else:
        check_lengths_fit(fleet.colocated.setup, workload.input_len, workload.output_len)
    return _FleetRun(fleet, workload, [int(s) for s in sessions]).run()


class _FleetRun:
    def __init__(self, fleet: Fleet, workload: Workload, sessions: list[int]):
        self.fleet = fleet
        self.arrival = [float(a) for a in workload.arrival]
        self.inp = [int(x) for x in workload.input_len]
        self.out = [int(x) for x in workload.output_len]
        self.sessions = sessions
        self.prefix = list(workload.prefix) if workload.prefix is not None else [None] * len(self.inp)
        n = self.n = len(self.arrival)
        self.router: Router = make_router(fleet.router, fleet.seed)
        self.needs_state = self.router.needs_state
        hook = type(self.router).on_request_complete is not Router.on_request_complete
        self.clock = Clock()
        self.heap: list = []
        self.seq = 0
        self.events: list[tuple] = []
        self.timeline: list[tuple] = []
        # where each request's current attempt lives: first token from (fw, fl), finish from (dw, dl)
        self.fw, self.fl = [-1] * n, [-1] * n
        self.dw, self.dl = [-1] * n, [-1] * n
        self.pending = [-1] * n            # PD: decode worker chosen, KV not yet there
        self.attempt = [0] * n
        self.retries = [0] * n
        self.error: list[str | None] = [None] * n
        self.xfer = [math.nan] * n
        self.failures = fleet.failures
        self.max_retries = fleet.failures.retries if fleet.failures else 0
        self.log_routes = fleet.log_routes

        self.workers: list[Worker] = []
        self.sched: list[float] = []       # prefill workers: time of their pending STEP event
        if fleet.disaggregated:
            self.link = fleet.link
            for _ in range(fleet.prefill.instances):
                self._add_worker("prefill", fleet.prefill, 0.0, "up", self._prefill_hook)
            for _ in range(fleet.decode.instances):
                self._add_worker("decode", fleet.decode, 0.0, "up", self._finish_hook if hook else None)
        else:
            for _ in range(fleet.colocated.instances):
                self._add_worker("colocated", fleet.colocated, 0.0, "up", self._finish_hook if hook else None)
        self.finish_hook = hook
        self._refresh_routable()

    # --- workers ---------------------------------------------------------------------------------

    def _add_worker(self, pool_name, pool, t, state, hook_factory):
        wid = len(self.workers)
        on_finish = hook_factory(wid) if hook_factory else None
        self.workers.append(Worker(wid, pool_name, pool.setup, pool.gpus_per_instance, self.clock, t,
                                   on_finish, state))
        self.sched.append(math.inf)
        return self.workers[-1]

    def _refresh_routable(self):
        def routable(w):
            return w.state == "up" or (w.state == "failed" and not w.detected)
        by_pool: dict[str, list[Worker]] = {"colocated": [], "prefill": [], "decode": []}
        for w in self.workers:
            if routable(w):
                by_pool[w.pool].append(w)
        self.routable = by_pool
        up = sum(w.state == "up" for w in self.workers)
        starting = sum(w.state == "starting" for w in self.workers)
        if not self.timeline or self.timeline[-1][1:] != (up, starting):
            self.timeline.append((self.clock.now, up, starting))

    def _push(self, t, kind, payload, key=0):
        heapq.heappush(self.heap, (t, kind, key, self.seq, payload))
        self.seq += 1

    def _schedule(self, w: Worker):
        """Keep one STEP event pending at a prefill instance's next step start."""
        nt = w.instance.next_time()
        w.next_t = nt
        if nt != self.sched[w.id] and nt != math.inf:
            self._push(nt, STEP, w.id)
            self.sched[w.id] = nt

    def _request(self, g):
        return FleetRequest(g, self.arrival[g], self.inp[g], self.out[g], self.sessions[g], self.prefix[g])

    # --- the loop --------------------------------------------------------------------------------

    def run(self) -> FleetResult:
        fleet, heap, arrival, n = self.fleet, self.heap, self.arrival, self.n
        last_arrival = arrival[-1] if n else 0.0
        if self.failures is not None:
            for t, wid in self.failures.at:
                self._push(float(t), FAIL, wid)
            if self.failures.mtbf_s is not None:
                rng = random.Random(self.failures.seed)
                for w in list(self.workers):
                    t = rng.expovariate(1 / self.failures.mtbf_s)
                    if t <= last_arrival:
                        self._push(t, FAIL, w.id)
        if fleet.autoscaler is not None:
            self.policy = fleet.autoscaler.make_policy()
            self._push(fleet.autoscaler.interval_s, SCALE, None)

        i = 0
        while True:
            if heap:
                top = heap[0]
                take_arrival = i < n and (arrival[i] < top[0] or (arrival[i] == top[0] and ARRIVAL < top[1]))
            elif i < n:
                take_arrival = True
            else:
                break
            if take_arrival:
                t = arrival[i]
                self.clock.now = t
                self._route(i, t)
                i += 1
                continue
            t, kind, _, _, payload = heapq.heappop(heap)
            self.clock.now = t
            if kind == STEP:
                w = self.workers[payload]
                if self.sched[payload] != t or w.state in ("failed", "removed"):
                    continue
                self.sched[payload] = math.inf
                w.instance.advance(math.nextafter(t, math.inf))
                self._schedule(w)
            elif kind == TRANSFER:
                self._transfer_done(t, *payload)
            elif kind == FAIL:
                self._fail(t, payload)
            elif kind == DETECT:
                self._detect(t, payload)
            elif kind == READY:
                self._ready(t, payload)
            elif kind == SCALE:
                self._tick(t, last_arrival)

        for w in self.workers:
            if w.state not in ("failed", "removed"):
                w.instance.advance()
                w.next_t = w.instance.next_time()
        return self._result()

    # --- routing ---------------------------------------------------------------------------------

    def _route(self, g: int, t: float) -> None:
        if self.fleet.disaggregated:
            pre, dec = self.routable["prefill"], self.routable["decode"]
            if not pre or not dec:
                self._fail_request(g, t, "no_instance")
                return
            if self.needs_state:
                for w in dec:
                    if w.next_t < t:
                        w.bring_to(t)
            pw, dw = self.router.select_pair(self._request(g), pre, dec)
            if self.log_routes:
                self.events.append((t, "route", g, pw.id, dw.id))
            if pw.state == "failed":
                pw.lost.append(g)
                pw.sent_after_failure += 1
                return
            lid = pw.submit(g, t, self.inp[g], 1, prefix=self.prefix[g])
            self.fw[g], self.fl[g] = pw.id, lid
            if self.out[g] > 1:
                self.pending[g] = dw.id
                dw.in_transit += 1
            self._schedule(pw)
            return
        ups = self.routable["colocated"]
        if not ups:
            self._fail_request(g, t, "no_instance")
            return
        if self.needs_state:
            for w in ups:
                if w.next_t < t:
                    w.bring_to(t)
        w = self.router.select_worker(self._request(g), ups)
        if self.log_routes:
            self.events.append((t, "route", g, w.id, None))
        if w.state == "failed":
            w.lost.append(g)
            w.sent_after_failure += 1
            return
        lid = w.submit(g, t, self.inp[g], self.out[g], prefix=self.prefix[g])
        self.fw[g] = self.dw[g] = w.id
        self.fl[g] = self.dl[g] = lid

    def _fail_request(self, g, t, reason):
        self.error[g] = reason
        self.events.append((t, "error", g, -1, reason))

    # --- PD: prompt done, KV on the link, decode admission ---------------------------------------

    def _prefill_hook(self, wid):
        def done(lid, f):
            w = self.workers[wid]
            g = w.local[lid]
            if self.out[g] == 1:                 # nothing to decode: finished with its prompt
                self.dw[g], self.dl[g] = wid, lid
                if self.finish_hook:
                    self.router.on_request_complete(self._request(g), w)
                return
            x = self.link.transfer_s(self.inp[g], w.setup.kv_bytes_per_token)
            self.xfer[g] = x
            self._push(f + x, TRANSFER, (g, self.attempt[g], self.pending[g]), key=g)
            self.events.append((f, "transfer", g, wid, self.pending[g]))
        return done

    def _transfer_done(self, e, g, attempt, did):
        if attempt != self.attempt[g]:
            return                               # its prefill instance failed: a new attempt runs
        d = self.workers[did]
        d.in_transit -= 1
        self.pending[g] = -1
        if d.state == "failed":
            self._lose(g)
            if d.detected:
                self._retry_or_fail(g, e)
            else:
                d.lost.append(g)
            return
        self.events.append((e, "decode", g, did, None))
        lid = d.submit(g, e, self.inp[g], self.out[g], prefilled=True)
        self.dw[g], self.dl[g] = did, lid

    def _finish_hook(self, wid):
        def done(lid, f):
            w = self.workers[wid]
            g = w.local[lid]
            if self.dw[g] == wid and self.dl[g] == lid:
                self.router.on_request_complete(self._request(g), w)
        return done

    # --- failures --------------------------------------------------------------------------------

    def _lose(self, g):
        """The current attempt of request g is gone: pending events for it become stale."""
        self.attempt[g] += 1
        if self.pending[g] >= 0:
            self.workers[self.pending[g]].in_transit -= 1
            self.pending[g] = -1
        self.fw[g] = self.fl[g] = self.dw[g] = self.dl[g] = -1

    def _fail(self, t, wid):
        w = self.workers[wid]
        if w.state in ("failed", "removed"):
            return
        self.events.append((t, "fail", -1, wid, w.state))
        if w.state != "starting":
            w.bring_to(t)
            for lid in w.instance.unfinished_at(t):
                g = w.local[lid]
                if (self.fw[g] == wid and self.fl[g] == lid) or (self.dw[g] == wid and self.dl[g] == lid):
                    self._lose(g)
                    w.lost.append(g)
        w.state = "failed"
        w.failed_s = w.stopped_s = t
        w.next_t = math.inf
        self._push(t + self.failures.detect_s, DETECT, wid)

    def _detect(self, t, wid):
        w = self.workers[wid]
        w.detected = True
        self._refresh_routable()
        lost, w.lost = w.lost, []
        self.events.append((t, "detect", -1, wid, len(lost)))
        for g in lost:
            self._retry_or_fail(g, t)

    def _retry_or_fail(self, g, t):
        if self.retries[g] < self.max_retries:
            self.retries[g] += 1
            self.events.append((t, "retry", g, -1, self.retries[g]))
            self._route(g, t)
        else:
            self._fail_request(g, t, "instance_failed")

    # --- autoscaling -----------------------------------------------------------------------------

    def _tick(self, t, last_arrival):
        a = self.fleet.autoscaler
        live = [w for w in self.workers if w.state in ("up", "draining")]
        for w in live:
            w.bring_to(t)
        self._retire_drained(t)
        up = [w for w in self.workers if w.state == "up"]
        starting = [w for w in self.workers if w.state == "starting"]
        signal = Signal(t, len(up), len(starting), sum(w.outstanding for w in up),
                        [w.queue_age() for w in up])
        current = len(up) + len(starting)
        desired = min(a.max_instances, max(a.min_instances, int(self.policy.desired(signal))))
        if desired > current:
            ready = t + a.cold_start_s(self.fleet.colocated.setup.weight_bytes)
            for _ in range(desired - current):
                w = self._add_worker("colocated", self.fleet.colocated, t, "starting", None)
                self.events.append((t, "scale_up", -1, w.id, ready))
                self._push(ready, READY, w.id)
        elif desired < current:
            surplus = current - desired
            for w in reversed(starting):             # cancel cold starts first
                if surplus == 0:
                    break
                w.state, w.stopped_s = "removed", t
                self.events.append((t, "cancel", -1, w.id, None))
                surplus -= 1
            for w in sorted(up, key=lambda w: (w.outstanding, -w.id))[:surplus]:
                w.state, w.drain_s = "draining", t
                self.events.append((t, "drain", -1, w.id, w.outstanding))
            self._retire_drained(t)
        self._refresh_routable()
        if t + a.interval_s <= last_arrival:
            self._push(t + a.interval_s, SCALE, None)

    def _retire_drained(self, t):
        for w in self.workers:
            if w.state == "draining" and w.outstanding == 0:
                fin = w.instance.fin
                w.state = "removed"
                w.stopped_s = max([w.drain_s] + [f for f in fin if f == f])
                self.events.append((t, "remove", -1, w.id, w.stopped_s))

    def _ready(self, t, wid):
        w = self.workers[wid]
        if w.state != "starting":
            return
        w.state, w.ready_s = "up", t
        w.next_t = w.instance.next_time()
        self.events.append((t, "ready", -1, wid, None))
        self._refresh_routable()

    # --- the result ------------------------------------------------------------------------------

    def _result(self) -> FleetResult:
        n = self.n
        first, finish = np.full(n, math.nan), np.full(n, math.nan)
        fw, fl, dw, dl = (np.asarray(x, dtype=np.int64) for x in (self.fw, self.fl, self.dw, self.dl))
        per_worker = [w.instance.result() for w in self.workers]
        for w, res in zip(self.workers, per_worker):
            m = fw == w.id
            first[m] = res.first_token[fl[m]]
            m = dw == w.id
            finish[m] = res.finish[dl[m]]
        done = ~np.isnan(finish)
        end = float(finish[done].max()) if done.any() else (self.arrival[-1] if n else 0.0)
        end = max(end, max((t for t, *_ in self.events), default=0.0)) if not done.any() else end
        records = []
        for w, res in zip(self.workers, per_worker):
            if w.state == "draining":
                fin = res.finish
                stopped = max([w.drain_s] + fin[~np.isnan(fin)].tolist())
            elif w.state in ("up", "starting"):
                stopped = max(end, w.started_s)
            else:
                stopped = w.stopped_s
            records.append(WorkerRecord(w.id, w.pool, w.gpus, w.started_s, w.ready_s, stopped, w.failed_s,
                                        w.state if w.state != "draining" else "removed",
                                        int(((dw == w.id) & done).sum())))
        self.timeline.append((end, *self.timeline[-1][1:]))
        # Steps are committed whole, so a transfer is logged when its prompt's step runs, before
        # arrivals during that step: order the log by time (stable: ties keep processing order).
        self.events.sort(key=lambda e: e[0])
        return FleetResult(
            self.arrival, first, finish, self.inp, self.out,
            instance=dw, prefill_instance=fw if self.fleet.disaggregated else dw.copy(),
            error=self.error, retries=self.retries, transfer_s=self.xfer, workers=records,
            worker_results=per_worker, events=self.events, timeline=self.timeline, end_s=end,
            gpu_hour_usd=self.fleet.gpu_hour_usd, disaggregated=self.fleet.disaggregated)
