"""Arrivals and retries: the router picks where a request goes, and one delivery path sends it there.

A colocated request runs whole on one worker; a PD request runs its prompt and first token
(input_len, 1) on a prefill worker, and, with more than one token to produce, the rest on the
decode worker chosen at the same moment (its KV then crosses the link: ``transfer``). Both are the
same delivery: the first stage on ``first``, the finish from ``last`` (the same worker when
colocated, or when a PD request has a single output token).

A request sent to an instance that has failed but is still routable (the health check has not
noticed) is lost there: the gateway's answer never comes, and it is retried at detection.
"""

from __future__ import annotations

from sim.fleet.routers import Router
from sim.fleet.state import RunState


class Delivery:
    def __init__(self, st: RunState):
        self.st = st
        self.pd = st.fleet.disaggregated
        self.pool_names = st.fleet.pool_names
        self.log_routes = st.fleet.log_routes
        self.hook = st.router.has_completion_hook
        self.one_pool = len(self.pool_names) == 1 and type(st.router).select_pool is Router.select_pool
        self.transfers = None          # set by the clock (PD: a prefill worker's step must be scheduled)

    def route(self, t: float, g: int) -> None:
        """Choose request g's worker(s) at t and send it; no routable worker: it fails now. (The
        ARRIVAL handler; a retry calls it too.)"""
        st = self.st
        router, request = st.router, st.request(g)
        if self.pd:
            pre, dec = st.routable["prefill"], st.routable["decode"]
            if not pre or not dec:
                return self.fail_request(g, t, "no_instance")
            if self.hook:
                self._report_completions(dec, t)
            first, last = router.select_pair(request, pre, dec)
        else:
            ups = st.routable["colocated" if self.one_pool else router.select_pool(request, self.pool_names)]
            if not ups:
                return self.fail_request(g, t, "no_instance")
            if self.hook:
                self._report_completions(ups, t)
            first = last = router.select_worker(request, ups)
        if self.log_routes:
            st.events.append((t, "route", g, first.id, last.id if self.pd else None))
        if first.state == "failed":
            first.lost.append(g)
            first.sent_after_failure += 1
            return
        self.deliver(g, t, first, last)

    def deliver(self, g: int, t: float, first, last) -> None:
        st = self.st
        staged = self.pd and st.out[g] > 1          # a decode stage follows on `last`
        lid = first.submit(g, t, st.inp[g], 1 if self.pd else st.out[g], prefix=st.prefix[g])
        st.fw[g], st.fl[g] = first.id, lid
        if staged:
            st.pending[g] = last.id
            last.in_transit += 1
        else:
            st.dw[g], st.dl[g] = first.id, lid
        if self.pd:
            self.transfers.schedule(first)

    def _report_completions(self, workers, t: float) -> None:
        """A router with a completion hook hears of every finish before the decision: its pool's
        workers are brought to t (a router that only reads state brings what it reads itself)."""
        for w in workers:
            w.bring_to(t)

    def fail_request(self, g: int, t: float, reason: str) -> None:
        self.st.error[g] = reason
        self.st.log(t, "error", g, -1, reason)

    def finish_hook(self, wid: int):
        """``on_finish`` for a worker: the router's completion hook, for current attempts only."""
        st = self.st

        def done(lid, f):
            w = st.workers[wid]
            g = w.local[lid]
            if st.dw[g] == wid and st.dl[g] == lid:
                st.router.on_request_complete(st.request(g), w)
        return done
