"""Autoscaling at run time: at every tick the policy (``autoscale``) reads the pool and sets how
many instances it should have; new instances start cold, surplus ones are cancelled (starting,
newest first) or drained (fewest outstanding first, ties to the highest id) and removed once empty.

Ticks come every ``interval_s`` from ``interval_s`` on, while the tick is at or before the last
arrival. A drained instance holds its GPUs until its last request finishes (billing).
"""

from __future__ import annotations

import numpy as np

from sim.fleet.autoscale import Signal
from sim.fleet.events import READY, SCALE
from sim.fleet.state import RunState


class ScalingHandler:
    def __init__(self, st: RunState, finish_hook=None):
        self.st = st
        self.finish_hook = finish_hook          # worker id -> its on_finish callback (or None)
        self.spec = st.fleet.autoscaler
        self.policy = self.spec.make_policy() if self.spec is not None else None
        self.last_arrival = st.arrival[-1] if st.n else 0.0

    def start(self) -> None:
        if self.spec is not None:
            self.st.queue.push(self.spec.interval_s, SCALE, None)

    def on_tick(self, t: float, _payload=None) -> None:
        st, a = self.st, self.spec
        for w in st.workers:                   # every live instance up to now, in id order
            if w.state in ("up", "draining"):
                w.bring_to(t)
        self.retire_drained(t)
        up = [w for w in st.workers if w.state == "up"]
        starting = [w for w in st.workers if w.state == "starting"]
        signal = Signal(t, len(up), len(starting), sum(w.outstanding for w in up), [w.queue_age() for w in up])
        current = len(up) + len(starting)
        desired = min(a.max_instances, max(a.min_instances, int(self.policy.desired(signal))))
        if desired > current:
            self._start(t, desired - current)
        elif desired < current:
            self._shrink(t, current - desired, up, starting)
        st.refresh_routable()
        if t + a.interval_s <= self.last_arrival:
            st.queue.push(t + a.interval_s, SCALE, None)

    def _start(self, t: float, count: int) -> None:
        st = self.st
        pool = st.fleet.colocated
        ready = t + self.spec.cold_start_s(pool.setup.weight_bytes)
        for _ in range(count):
            hook = self.finish_hook(len(st.workers)) if self.finish_hook else None
            w = st.add_worker("colocated", pool, t, "starting", hook)
            st.log(t, "scale_up", -1, w.id, ready)
            st.queue.push(ready, READY, w.id)

    def _shrink(self, t: float, surplus: int, up: list, starting: list) -> None:
        st = self.st
        for w in reversed(starting):            # cancel cold starts first
            if surplus == 0:
                break
            w.state, w.stopped_s = "removed", t
            st.log(t, "cancel", -1, w.id, None)
            surplus -= 1
        for w in sorted(up, key=lambda w: (w.outstanding, -w.id))[:surplus]:
            w.state, w.drain_s = "draining", t
            st.log(t, "drain", -1, w.id, w.outstanding)
        self.retire_drained(t)

    def retire_drained(self, t: float) -> None:
        """Drained instances with nothing outstanding are removed; they held GPUs to their last finish."""
        for w in self.st.workers:
            if w.state == "draining" and w.outstanding == 0:
                w.state = "removed"
                w.stopped_s = last_finish(w)
                self.st.log(t, "remove", -1, w.id, w.stopped_s)

    def on_ready(self, t: float, wid: int) -> None:
        st = self.st
        w = st.workers[wid]
        if w.state != "starting":
            return
        w.state, w.ready_s = "up", t
        w.next_t = w.instance.next_time()
        st.log(t, "ready", -1, wid, None)
        st.refresh_routable()


def last_finish(w) -> float:
    """When a drained worker's GPUs are free: its drain instant or its last finish, the later."""
    fin = w.instance.result().finish
    return max([w.drain_s] + fin[~np.isnan(fin)].tolist())
