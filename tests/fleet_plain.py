"""A plain fleet: the yardstick ``sim.fleet`` is tested against, written to be obviously right.

Every instance is a plain stepper (the step rule of ``tests/reference.py``, with prefilled arrivals
as in ``tests/fleet_reference.py``: one object per request, every running request touched at every
step). One plain event loop drives them all: at each turn it takes the earliest of the pending
events, the next arrival and every instance's next step start, ties broken by kind in the order

    FAIL, DETECT, READY, SCALE, TRANSFER, ARRIVAL, STEP

(then KV transfers by request id, other events by the order they were made, steps at one instant
by instance id). Instances are stepped
eagerly: a step is run at its start instant, after everything else at that instant, so at any
moment t every step starting before t has run and none starting at t has.

What a gateway sees of an instance at time t (the router's view), defined on the request objects:

- outstanding: requests sent to it whose answer has not come by t (finish <= t), plus (decode
  side) requests routed to it whose KV is still on the link. A failed instance answers nothing
  after its failure: its answers stop at the failure instant, and the requests sent to it after
  the failure (until the health check notices) count too.
- queue_len: requests sent to it and not admitted by a step that started before t.
- running: admitted by a step that started before t and not finished by t.
- free_kv_tokens: capacity minus the reservations of the running requests.
- queue_age(): t minus the arrival of the oldest request not yet admitted (0 if none).
A failed instance's figures are frozen at its failure instant.

PD: a request is routed to a (prefill, decode) pair at arrival. On the prefill instance it is the
prompt and its first token (input_len, 1); when the prompt completes (at the end of its step, f) the
KV goes on the link and arrives at f + input_len x kv_bytes_per_token / (gbs x 1e9) + latency_s;
then the decode instance admits it as a prefilled request (FIFO, reservation input + output).

Failures: at a failure instant every request whose current attempt is on the instance and not
finished by then (prefill side: prompt not complete) is lost; if it was waiting for a decode
instance, that reservation is released. ``detect_s`` later the gateway notices: the instance is no
longer routable and each lost request, in the order lost, is routed again (its TTFT counts from the
original arrival) if it has retries left, else recorded as failed ("instance_failed").

Autoscaling (colocated only): at every tick (interval_s, then every interval_s while the tick is at
or before the last arrival), drained instances with nothing outstanding are removed, the policy
reads (up, starting, outstanding over up instances, queue ages of up instances), the count is
clamped, new instances start cold (ready after weight_bytes / source bandwidth + init_s) or
starting ones are cancelled (newest first) and then up ones drained (fewest outstanding first,
ties to the highest id).

Several colocated pools (``Fleet.pools``): the router's ``select_pool`` names the pool, and its
routable instances are the candidates.

Router completion hooks (``on_request_complete``) are not modelled here.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sim.fleet.autoscale import WEIGHT_SOURCES_GBS, Signal
from sim.fleet.routers import FleetRequest, Router, make_router

FAIL, DETECT, READY, SCALE, TRANSFER, ARRIVAL, STEP = range(7)


@dataclass(eq=False)
class Attempt:
    """One request on one instance."""

    g: int
    arrival: float
    input_len: int
    output_len: int
    prefilled: bool
    prompt_done: int = 0
    generated: int = 0
    admitted_at: float | None = None      # start of the step that admitted it
    first_token: float | None = None
    second_token: float | None = None
    finish: float | None = None


class PlainWorker:
    def __init__(self, fleet_run, wid, pool, setup, state, started):
        self.run, self.id, self.pool, self.setup, self.state = fleet_run, wid, pool, setup, state
        self.attempts: list[Attempt] = []
        self.waiting: list[Attempt] = []
        self.batch: list[Attempt] = []        # running, in admission order
        self.kv_used = 0
        self.now = 0.0                    # end of its last step
        self.in_transit: list[int] = []   # requests routed here whose KV is on the link
        self.sent_after_failure = 0
        self.lost: list[int] = []
        self.failed_s = math.nan
        self.detected = False
        self.started_s, self.ready_s = started, (started if state == "up" else math.nan)
        self.stopped_s = math.nan
        self.drain_s = math.nan

    # --- the gateway's view at the fleet's time ----------------------------------------------

    def _t(self):
        t = self.run.now
        return min(t, self.failed_s) if self.state == "failed" else t

    def _answered(self, a, t):
        return a.finish is not None and a.finish <= t

    @property
    def outstanding(self):
        t = self._t()
        return (sum(not self._answered(a, t) for a in self.attempts) + len(self.in_transit)
                + self.sent_after_failure)

    @property
    def queue_len(self):
        t = self._t()
        return sum(a.admitted_at is None or a.admitted_at >= t for a in self.attempts)

    def _holding(self, t):
        return [a for a in self.attempts
                if a.admitted_at is not None and a.admitted_at < t and not self._answered(a, t)]

    @property
    def running(self):
        return len(self._holding(self._t()))

    @property
    def free_kv_tokens(self):
        t = self._t()
        return self.setup.kv_capacity_tokens - sum(a.input_len + a.output_len for a in self._holding(t))

    def queue_age(self):
        t = self._t()
        queued = [a for a in self.attempts if a.admitted_at is None or a.admitted_at >= t]
        return max(0.0, t - queued[0].arrival) if queued else 0.0

    # --- the step rule --------------------------------------------------------------------------

    def submit(self, g, t, input_len, output_len, prefilled=False):
        a = Attempt(g, t, input_len, output_len, prefilled)
        if prefilled:                     # its prompt ran elsewhere; its first token came with it
            a.prompt_done, a.generated = input_len, 1
        self.attempts.append(a)
        return a

    def next_start(self):
        if self.state in ("failed", "removed", "starting"):
            return math.inf
        arrived = [a for a in self.attempts if a.admitted_at is None]
        if self.batch:
            return self.now
        if arrived:
            return max(self.now, arrived[0].arrival)
        return math.inf

    def step(self):
        """Run the step starting at next_start(); returns (prompts completed, requests finished)."""
        setup = self.setup
        self.now = start = self.next_start()
        for a in self.attempts:
            if a.admitted_at is None and a not in self.waiting and a.arrival <= start:
                self.waiting.append(a)
        budget = setup.max_num_batched_tokens
        work = []
        context = sum(a.prompt_done + a.generated for a in self.batch)
        for a in self.batch:            # decoders: one token each, even past the budget
            if a.prompt_done == a.input_len:
                work.append((a, 1))
                budget -= 1
        for a in self.batch:            # prompts, in admission order, while budget lasts
            if a.prompt_done < a.input_len:
                give = min(a.input_len - a.prompt_done, budget)
                if give <= 0:
                    break
                work.append((a, give))
                budget -= give
        while (self.waiting and budget > 0 and len(self.batch) < setup.max_num_seqs
               and self.kv_used + self.waiting[0].input_len + self.waiting[0].output_len
               <= setup.kv_capacity_tokens):
            a = self.waiting.pop(0)
            a.admitted_at = start
            self.kv_used += a.input_len + a.output_len
            self.batch.append(a)
            if a.prefilled:
                context += a.input_len + 1    # the KV it brought is read by this step
                work.append((a, 1))
                budget -= 1
            else:
                give = min(a.input_len, budget)
                work.append((a, give))
                budget -= give
        tokens = sum(g for _, g in work)
        pairs = sum(a.prompt_done + j + 1 for a, g in work if a.prompt_done < a.input_len for j in range(g))
        decoders = sum(1 for a, _ in work if a.prompt_done >= a.input_len)
        self.now = start + setup.step_time(tokens, context, pairs, decoders)
        prompts, finished = [], []
        for a, give in work:
            if a.prompt_done < a.input_len:
                a.prompt_done += give
                if a.prompt_done == a.input_len:
                    a.generated = 1
                    a.first_token = self.now
                    prompts.append(a)
            else:
                a.generated += 1
                if a.generated == 2:
                    a.second_token = self.now
            if a.generated == a.output_len:
                a.finish = self.now
                self.batch.remove(a)
                self.kv_used -= a.input_len + a.output_len
                finished.append(a)
        return prompts, finished


class PlainFleetRun:
    def __init__(self, fleet, workload, sessions=None):
        self.fleet = fleet
        self.arrival = [float(a) for a in workload.arrival]
        self.inp = [int(x) for x in workload.input_len]
        self.out = [int(x) for x in workload.output_len]
        n = self.n = len(self.arrival)
        self.sessions = list(range(n)) if sessions is None else [int(s) for s in sessions]
        self.router: Router = make_router(fleet.router, fleet.seed)
        assert not self.router.has_completion_hook, "hooks not modelled"
        self.now = 0.0
        self.events: list[tuple] = []     # (time, kind, seq, payload)
        self.seq = 0
        self.workers: list[PlainWorker] = []
        self.first: list[Attempt | None] = [None] * n      # the current attempt's prompt
        self.last: list[Attempt | None] = [None] * n       # the current attempt's decode (or whole)
        self.where = [-1] * n                              # instance of the current decode attempt
        self.where_prefill = [-1] * n
        self.pending = [-1] * n           # PD: decode instance chosen, KV not there yet
        self.attempt = [0] * n
        self.retries = [0] * n
        self.error: list[str | None] = [None] * n
        self.transfer = [math.nan] * n
        if fleet.disaggregated:
            pools = [("prefill", fleet.prefill), ("decode", fleet.decode)]
        else:
            pools = [("colocated", fleet.colocated)] + list(fleet.pools)
        for name, pool in pools:
            for _ in range(pool.instances):
                self.workers.append(PlainWorker(self, len(self.workers), name, pool.setup, "up", 0.0))

    def push(self, t, kind, payload):
        self.events.append((t, kind, self.seq, payload))
        self.seq += 1

    def routable(self, pool):
        return [w for w in self.workers if w.pool == pool
                and (w.state == "up" or (w.state == "failed" and not w.detected))]

    def request(self, g):
        return FleetRequest(g, self.arrival[g], self.inp[g], self.out[g], self.sessions[g])

    # --- the loop ------------------------------------------------------------------------------

    def run(self):
        fleet, n = self.fleet, self.n
        last_arrival = self.arrival[-1] if n else 0.0
        if fleet.failures is not None:
            for t, wid in fleet.failures.at:
                self.push(float(t), FAIL, wid)
            if fleet.failures.mtbf_s is not None:
                rng = random.Random(fleet.failures.seed)
                for w in list(self.workers):
                    t = rng.expovariate(1 / fleet.failures.mtbf_s)
                    if t <= last_arrival:
                        self.push(t, FAIL, w.id)
        if fleet.autoscaler is not None:
            self.policy = fleet.autoscaler.make_policy()
            self.push(fleet.autoscaler.interval_s, SCALE, None)
        i = 0
        while True:
            candidates = list(self.events)
            if i < n:
                candidates.append((self.arrival[i], ARRIVAL, -1, i))
            for w in self.workers:
                s = w.next_start()
                if s != math.inf:
                    candidates.append((s, STEP, w.id, w))
            if not candidates:
                break
            t, kind, seq, payload = min(candidates, key=lambda e: (e[0], e[1], e[3][0] if e[1] == TRANSFER else 0, e[2]))
            self.now = t
            if kind == ARRIVAL:
                self.route(i, t)
                i += 1
                continue
            if kind == STEP:
                self.step(payload)
                continue
            self.events.remove((t, kind, seq, payload))
            if kind == TRANSFER:
                self.transfer_done(t, *payload)
            elif kind == FAIL:
                self.fail(t, payload)
            elif kind == DETECT:
                self.detect(t, payload)
            elif kind == READY:
                self.ready(t, payload)
            elif kind == SCALE:
                self.tick(t, last_arrival)
        return self

    def step(self, w):
        prompts, finished = w.step()
        if w.pool != "prefill":
            return
        for a in prompts:                     # the prompt is done: its KV goes on the link
            g = a.g
            if self.out[g] == 1:
                continue
            x = self.inp[g] * w.setup.kv_bytes_per_token / (self.fleet.link.gbs * 1e9) + self.fleet.link.latency_s
            self.transfer[g] = x
            self.push(a.first_token + x, TRANSFER, (g, self.attempt[g], self.pending[g]))

    # --- routing -------------------------------------------------------------------------------

    def route(self, g, t):
        if self.fleet.disaggregated:
            pre, dec = self.routable("prefill"), self.routable("decode")
            if not pre or not dec:
                self.error[g] = "no_instance"
                return
            pw, dw = self.router.select_pair(self.request(g), pre, dec)
            if pw.state == "failed":
                pw.lost.append(g)
                pw.sent_after_failure += 1
                return
            a = pw.submit(g, t, self.inp[g], 1)
            self.first[g], self.where_prefill[g] = a, pw.id
            if self.out[g] == 1:
                self.last[g], self.where[g] = a, pw.id
            else:
                self.pending[g] = dw.id
                dw.in_transit.append(g)
            return
        names = ("colocated",) + tuple(name for name, _ in self.fleet.pools)
        ups = self.routable(self.router.select_pool(self.request(g), names))
        if not ups:
            self.error[g] = "no_instance"
            return
        w = self.router.select_worker(self.request(g), ups)
        if w.state == "failed":
            w.lost.append(g)
            w.sent_after_failure += 1
            return
        a = w.submit(g, t, self.inp[g], self.out[g])
        self.first[g] = self.last[g] = a
        self.where[g] = self.where_prefill[g] = w.id

    def transfer_done(self, t, g, attempt, did):
        if attempt != self.attempt[g]:
            return                            # that attempt was lost with its prefill instance
        d = self.workers[did]
        d.in_transit.remove(g)
        self.pending[g] = -1
        if d.state == "failed":
            self.lose(g)
            if d.detected:
                self.retry_or_fail(g, t)
            else:
                d.lost.append(g)
            return
        self.last[g], self.where[g] = d.submit(g, t, self.inp[g], self.out[g], prefilled=True), d.id

    # --- failures ------------------------------------------------------------------------------

    def lose(self, g):
        self.attempt[g] += 1
        if self.pending[g] >= 0:
            self.workers[self.pending[g]].in_transit.remove(g)
            self.pending[g] = -1
        self.first[g] = self.last[g] = None
        self.where[g] = self.where_prefill[g] = -1

    def fail(self, t, wid):
        w = self.workers[wid]
        if w.state in ("failed", "removed"):
            return
        if w.state != "starting":
            for a in w.attempts:
                mine = a is self.first[a.g] or a is self.last[a.g]
                if mine and not (a.finish is not None and a.finish <= t):
                    self.lose(a.g)
                    w.lost.append(a.g)
        w.state, w.failed_s, w.stopped_s = "failed", t, t
        self.push(t + self.fleet.failures.detect_s, DETECT, wid)

    def detect(self, t, wid):
        w = self.workers[wid]
        w.detected = True
        lost, w.lost = w.lost, []
        for g in lost:
            self.retry_or_fail(g, t)

    def retry_or_fail(self, g, t):
        if self.retries[g] < self.fleet.failures.retries:
            self.retries[g] += 1
            self.route(g, t)
        else:
            self.error[g] = "instance_failed"

    # --- autoscaling ---------------------------------------------------------------------------

    def retire_drained(self, t):
        for w in self.workers:
            if w.state == "draining" and w.outstanding == 0:
                w.state = "removed"
                w.stopped_s = max([w.drain_s] + [a.finish for a in w.attempts if a.finish is not None])

    def tick(self, t, last_arrival):
        a = self.fleet.autoscaler
        self.retire_drained(t)
        up = [w for w in self.workers if w.state == "up"]
        starting = [w for w in self.workers if w.state == "starting"]
        signal = Signal(t, len(up), len(starting), sum(w.outstanding for w in up), [w.queue_age() for w in up])
        current = len(up) + len(starting)
        desired = min(a.max_instances, max(a.min_instances, int(self.policy.desired(signal))))
        if desired > current:
            setup = self.fleet.colocated.setup
            ready = t + (setup.weight_bytes / (WEIGHT_SOURCES_GBS[a.weight_source] * 1e9) + a.init_s)
            for _ in range(desired - current):
                w = PlainWorker(self, len(self.workers), "colocated", setup, "starting", t)
                self.workers.append(w)
                self.push(ready, READY, w.id)
        elif desired < current:
            surplus = current - desired
            for w in reversed(starting):
                if surplus == 0:
                    break
                w.state, w.stopped_s = "removed", t
                surplus -= 1
            for w in sorted(up, key=lambda w: (w.outstanding, -w.id))[:surplus]:
                w.state, w.drain_s = "draining", t
            self.retire_drained(t)
        if t + a.interval_s <= last_arrival:
            self.push(t + a.interval_s, SCALE, None)

    def ready(self, t, wid):
        w = self.workers[wid]
        if w.state == "starting":
            w.state, w.ready_s = "up", t

    # --- what came out -------------------------------------------------------------------------

    def first_token(self):
        return [math.nan if a is None or a.first_token is None else a.first_token for a in self.first]

    def second_token(self):
        return [math.nan if a is None or a.second_token is None else a.second_token for a in self.last]

    def finish(self):
        return [math.nan if a is None or a.finish is None else a.finish for a in self.last]


def plain_fleet_run(fleet, workload, sessions=None) -> PlainFleetRun:
    """Run ``workload`` through ``fleet`` the plain way; read ``first_token()``, ``finish()``,
    ``where`` (decode-side instance, -1 if none), ``where_prefill``, ``error``, ``retries``,
    ``transfer`` and ``workers`` off the returned object."""
    return PlainFleetRun(fleet, workload, sessions).run()
