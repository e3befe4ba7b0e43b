"""The fleet's event queue: one heap keyed ``(time, priority, key, sequence)``.

As in SimPy's core (its heap holds ``(time, priority, event id, event)``), ties always break the same
way: at one instant events go by priority -- a failure, its detection, an instance becoming ready,
an autoscaler tick, a finished KV transfer, an arrival, and last a prefill instance's step -- then
by ``key`` (a KV transfer's request id, so that transfers landing together are admitted in request
order whichever prefill instance sent them; 0 otherwise), then by the order they were pushed.

Arrivals are not pushed: they come from the workload's sorted list, merged with the heap at ``pop``
(720,000 pushes for an hour at 200 req/s would cost more than the routing).
"""

from __future__ import annotations

import heapq

FAIL, DETECT, READY, SCALE, TRANSFER, ARRIVAL, STEP = range(7)


class EventQueue:
    """Pending events and the arrival stream, in the order they must be handled."""

    __slots__ = ("heap", "seq", "arrival", "next_arrival")

    def __init__(self, arrival: list[float]):
        self.heap: list = []
        self.seq = 0
        self.arrival = arrival          # sorted arrival times; request i arrives at arrival[i]
        self.next_arrival = 0           # index of the next arrival not yet handed out

    def push(self, t: float, kind: int, payload, key: int = 0) -> None:
        heapq.heappush(self.heap, (t, kind, key, self.seq, payload))
        self.seq += 1

    def pop(self):
        """The next event ``(time, kind, payload)`` -- an arrival's payload is its request index --
        or None when nothing is left. An arrival goes first when earlier than the heap's top, or at
        the same instant with a lower priority value."""
        heap, i = self.heap, self.next_arrival
        if i < len(self.arrival):
            t = self.arrival[i]
            if not heap or t < heap[0][0] or (t == heap[0][0] and ARRIVAL < heap[0][1]):
                self.next_arrival = i + 1
                return t, ARRIVAL, i
        elif not heap:
            return None
        t, kind, _, _, payload = heapq.heappop(heap)
        return t, kind, payload
