"""Failures at run time: an instance stops, the gateway notices ``detect_s`` later, lost requests
are routed again or recorded as failed.

A request's attempt is lost when its instance fails before finishing it (a prefill instance:
before the prompt completes). The health check notices ``detect_s`` later: the instance is no
longer routable and each request lost there is routed again, in the order lost (its TTFT still
counts from the original arrival), while it has retries left, else recorded as failed
("instance_failed"). The failure instants are drawn once at the start (``Failures``: given
``(time, instance)`` pairs, and one exponential draw of mean ``mtbf_s`` per starting instance).
"""

from __future__ import annotations

import math
import random

from sim.fleet.events import DETECT, FAIL
from sim.fleet.state import RunState


class FailureHandler:
    def __init__(self, st: RunState, delivery):
        self.st = st
        self.delivery = delivery
        self.spec = st.fleet.failures
        self.max_retries = self.spec.retries if self.spec is not None else 0

    def start(self) -> None:
        """Push every failure the run will have."""
        if self.spec is None:
            return
        st, spec = self.st, self.spec
        for t, wid in spec.at:
            st.queue.push(float(t), FAIL, wid)
        if spec.mtbf_s is not None:
            last_arrival = st.arrival[-1] if st.n else 0.0
            rng = random.Random(spec.seed)
            for w in list(st.workers):
                t = rng.expovariate(1 / spec.mtbf_s)
                if t <= last_arrival:
                    st.queue.push(t, FAIL, w.id)

    def on_fail(self, t: float, wid: int) -> None:
        st = self.st
        w = st.workers[wid]
        if w.state in ("failed", "removed"):
            return
        st.log(t, "fail", -1, wid, w.state)
        if w.state != "starting":
            w.bring_to(t)
            for lid in w.instance.unfinished_at(t):
                g = w.local[lid]
                if (st.fw[g] == wid and st.fl[g] == lid) or (st.dw[g] == wid and st.dl[g] == lid):
                    st.lose(g)
                    w.lost.append(g)
        w.state = "failed"
        w.failed_s = w.stopped_s = t
        w.next_t = math.inf
        st.queue.push(t + self.spec.detect_s, DETECT, wid)

    def on_detect(self, t: float, wid: int) -> None:
        st = self.st
        w = st.workers[wid]
        w.detected = True
        st.refresh_routable()
        lost, w.lost = w.lost, []
        st.log(t, "detect", -1, wid, len(lost))
        for g in lost:
            self.retry_or_fail(g, t)

    def retry_or_fail(self, g: int, t: float) -> None:
        st = self.st
        if st.retries[g] < self.max_retries:
            st.retries[g] += 1
            st.log(t, "retry", g, -1, st.retries[g])
            self.delivery.route(t, g)
        else:
            self.delivery.fail_request(g, t, "instance_failed")
