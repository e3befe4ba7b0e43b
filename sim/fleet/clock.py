"""The fleet clock: one event queue for the whole fleet, each event handed to its kind's handler.

    ARRIVAL   delivery.Delivery.route          route the request, send it (PD: prompt, then decode)
    STEP      transfer.Transfers.on_step       one step of a prefill instance (PD)
    TRANSFER  transfer.Transfers.on_transfer   a prompt's KV has landed: the decode instance admits it
    FAIL      failures.FailureHandler.on_fail  an instance stops; what it held is lost
    DETECT    failures.FailureHandler.on_detect   the health check notices: lost requests retried
    SCALE     scaling.ScalingHandler.on_tick   the autoscaler's tick
    READY     scaling.ScalingHandler.on_ready  a cold-started instance serves

Ties at one instant break by the kinds' priority (``events``: failure first, a prefill step last),
then by key and push order, so a run is the same every time. An arrival at the instant a step
starts joins that step, exactly as in the single-instance engine (``arrival <= now``).

A run whose only events are arrivals -- one colocated pool of the handbook's rule, no failures
or autoscaling, a router ``fast`` knows -- is handed whole to ``fast`` (the compiled fleet: the
same routing and steps in one compiled loop) where the engine compiles.

Colocated and decode instances are not stepped by events: they are advanced lazily, when something
reads their state (``worker``), and to the end once the queue is empty. Prefill instances are
stepped by events, because each finished prompt starts a KV transfer that must enter the queue
before anything later happens.

PD's choices: on a prefill instance a request is the prompt and its first token (input_len, 1),
so it reserves input_len + 1 tokens of KV and frees them when the prompt completes. The KV is
pushed to the decode side as it is produced (layer by layer, as Mooncake/NIXL-style engines do),
and a prefill instance, compute-bound, is rarely short of KV; holding the blocks until the
transfer ends would matter only then.
"""

from __future__ import annotations

import numpy as np

from sim.fleet import fast
from sim.fleet.assemble import assemble
from sim.fleet.delivery import Delivery
from sim.fleet.events import ARRIVAL, DETECT, FAIL, READY, SCALE, STEP, TRANSFER
from sim.fleet.failures import FailureHandler
from sim.fleet.result import FleetResult
from sim.fleet.routers import FleetRequest, Router, make_router
from sim.fleet.scaling import ScalingHandler
from sim.fleet.spec import Fleet
from sim.fleet.state import RunState
from sim.fleet.transfer import Transfers
from sim.validate import check_lengths_fit
from sim.workload import Workload


def run_fleet(fleet: Fleet, workload: Workload, *, sessions=None) -> FleetResult:
    """Run an open-loop workload through a fleet. ``sessions`` (one int per request, default the
    workload's sessions, else the request's index) is what ``session_affinity`` hashes."""
    if not isinstance(fleet, Fleet):
        raise ValueError(f"fleet must be a sim.fleet.Fleet, got {type(fleet).__name__}")
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a sim.workload.Workload, got {type(workload).__name__}")
    if workload.arrival is None:
        raise ValueError("workload: a fleet runs open-loop workloads (arrival times), not a closed loop")
    if workload.priority is not None and any(workload.priority):
        raise ValueError("Workload.priority: a fleet does not carry request priorities (run one instance "
                         "with sim.workload.run)")
    n = len(workload)
    if sessions is None:
        sessions = workload.session if workload.session is not None else range(n)
    elif len(sessions) != n:
        raise ValueError(f"sessions must hold one id per request ({n}), got {len(sessions)}")
    sessions = list(map(int, sessions))
    _check_lengths(fleet, workload, sessions)
    return _run(RunState(fleet, workload, sessions))


def _check_lengths(fleet: Fleet, workload: Workload, sessions: list[int]) -> None:
    """Every request must fit the instances it can be sent to (else it would wait forever)."""
    if fleet.disaggregated:
        check_lengths_fit(fleet.prefill.setup, np.asarray(workload.input_len), 1)
        check_lengths_fit(fleet.decode.setup, workload.input_len, workload.output_len)
        return
    router = make_router(fleet.router, fleet.seed)
    if not fleet.pools and type(router).select_pool is Router.select_pool:
        check_lengths_fit(fleet.colocated.setup, workload.input_len, workload.output_len)
        return
    # the router's pool rule (a function of the request alone) says which pool each request goes to
    names, pools = fleet.pool_names, dict(fleet.pool_items)
    inp, out = np.asarray(workload.input_len), np.asarray(workload.output_len)
    prefix = workload.prefix if workload.prefix is not None else [None] * len(inp)
    chosen = [router.select_pool(FleetRequest(g, float(workload.arrival[g]), int(inp[g]), int(out[g]),
                                              sessions[g], prefix[g]), names) for g in range(len(inp))]
    chosen = np.asarray(chosen, dtype=object)
    for name in set(chosen.tolist()):
        if name not in pools:
            g = int(np.flatnonzero(chosen == name)[0])
            raise ValueError(f"router sends request {g} (input_len {int(inp[g])}) to pool {name!r}, but the "
                             f"fleet's pools are {list(names)}")
        mine = chosen == name
        try:
            check_lengths_fit(pools[name].setup, inp[mine], out[mine])
        except ValueError as e:
            ids = np.flatnonzero(mine)
            raise ValueError(f"pool {name!r}: {e} (requests numbered among those the router sends there: "
                             f"fleet requests {ids[:4].tolist()}{'...' if len(ids) > 4 else ''})") from None


def _run(st: RunState) -> FleetResult:
    fleet = st.fleet
    delivery = Delivery(st)
    transfers = Transfers(st)
    failures = FailureHandler(st, delivery)
    scaling = ScalingHandler(st, delivery.finish_hook if st.router.has_completion_hook else None)
    delivery.transfers, transfers.failures = transfers, failures
    for name, pool in fleet.pool_items:
        for _ in range(pool.instances):
            if name == "prefill":
                hook = transfers.prompt_hook(len(st.workers))
            else:
                hook = delivery.finish_hook(len(st.workers)) if st.router.has_completion_hook else None
            st.add_worker(name, pool, 0.0, "up", hook)
    st.refresh_routable()
    failures.start()
    scaling.start()
    compiled = fast.plan(st)            # arrivals only, a router the compiled loop knows: one loop
    if compiled is not None:
        return assemble(st, compiled.run())

    by_kind = {ARRIVAL: delivery.route, STEP: transfers.on_step, TRANSFER: transfers.on_transfer,
               FAIL: failures.on_fail, DETECT: failures.on_detect, SCALE: scaling.on_tick, READY: scaling.on_ready}
    handlers = [by_kind[kind] for kind in sorted(by_kind)]       # indexed by kind (0 .. 6)
    clock, pop = st.clock, st.queue.pop
    while (event := pop()) is not None:
        t, kind, payload = event
        clock.now = t
        handlers[kind](t, payload)

    for w in st.workers:
        if w.state not in ("failed", "removed"):
            w.finish()
    return assemble(st)
