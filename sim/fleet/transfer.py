"""PD: prefill instances stepped one step per event, a finished prompt's KV on the link, and the
decode instance's admission.

A prefill instance is not advanced lazily like the others: each prompt it completes starts a KV
transfer whose landing must enter the event queue before anything later happens, so one STEP event
is kept pending at its next step start. The transfer starts at the prompt's end ``f`` and lands at
``f + input_len x kv_bytes_per_token / link bandwidth + latency``; the decode instance then admits
the request like any other (FIFO, whole reservation input + output), as a decoder.
"""

from __future__ import annotations

import math

from sim.fleet.events import STEP, TRANSFER
from sim.fleet.state import RunState


class Transfers:
    def __init__(self, st: RunState):
        self.st = st
        self.link = st.fleet.link
        self.sched: dict[int, float] = {}     # prefill worker -> time of its pending STEP event
        self.failures = None                  # set by the clock (a decode instance may have failed)

    def schedule(self, w) -> None:
        """Keep one STEP event pending at a prefill worker's next step start."""
        nt = w.next_start()
        if nt != self.sched.get(w.id, math.inf) and nt != math.inf:
            self.st.queue.push(nt, STEP, w.id)
            self.sched[w.id] = nt

    def on_step(self, t: float, wid: int) -> None:
        w = self.st.workers[wid]
        if self.sched.get(wid) != t or w.state in ("failed", "removed"):
            return                            # superseded, or its instance is gone
        self.sched[wid] = math.inf
        w.bring_to(math.nextafter(t, math.inf))     # this one step
        self.schedule(w)

    def prompt_hook(self, wid: int):
        """``on_finish`` for a prefill worker: a prompt (and first token) is done at f."""
        st = self.st

        def done(lid, f):
            w = st.workers[wid]
            g = w.local[lid]
            if st.out[g] == 1:                # nothing to decode: finished with its prompt
                if st.router.has_completion_hook and st.dw[g] == wid and st.dl[g] == lid:
                    st.router.on_request_complete(st.request(g), w)
                return
            x = self.link.transfer_s(st.inp[g], w.setup.kv_bytes_per_token)
            st.xfer[g] = x
            st.queue.push(f + x, TRANSFER, (g, st.attempt[g], st.pending[g]), key=g)
            st.log(f, "transfer", g, wid, st.pending[g])
        return done

    def on_transfer(self, t: float, payload) -> None:
        """The KV of request g has landed at decode worker did: it is admitted there."""
        st = self.st
        g, attempt, did = payload
        if attempt != st.attempt[g]:
            return                            # its prefill instance failed: a new attempt runs
        d = st.workers[did]
        d.in_transit -= 1
        st.pending[g] = -1
        if d.state == "failed":
            st.lose(g)
            if d.detected:
                self.failures.retry_or_fail(g, t)
            else:
                d.lost.append(g)
            return
        st.log(t, "decode", g, did, None)
        st.dw[g], st.dl[g] = did, d.submit_prefilled(g, t, st.inp[g], st.out[g])
