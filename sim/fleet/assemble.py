"""A finished run's state, assembled into a ``FleetResult``: each request's first token and finish
read from the instances its current attempt ran on, each worker's lifetime, the ordered event log."""

from __future__ import annotations

import math
from operator import itemgetter

import numpy as np

from sim.fleet.result import FleetResult, WorkerRecord
from sim.fleet.state import RunState


def assemble(st: RunState, per_worker=None) -> FleetResult:
    """``per_worker``: each worker's ``SimResult`` where the run did not keep them on its instances
    (the compiled fleet, ``fast``); by default each instance's own ``result()``."""
    n = st.n
    first, finish = np.full(n, math.nan), np.full(n, math.nan)
    fw, fl, dw, dl = (np.asarray(x, dtype=np.int64) for x in (st.fw, st.fl, st.dw, st.dl))
    if per_worker is None:
        per_worker = [w.instance.result() for w in st.workers]
    for w, res in zip(st.workers, per_worker):
        m = fw == w.id
        first[m] = res.first_token[fl[m]]
        m = dw == w.id
        finish[m] = res.finish[dl[m]]
    done = ~np.isnan(finish)
    if done.any():
        end = float(finish[done].max())
    else:
        end = max(st.arrival[-1] if n else 0.0, max((t for t, *_ in st.events), default=0.0))
    records = [_record(w, res, end, int(((dw == w.id) & done).sum())) for w, res in zip(st.workers, per_worker)]
    st.timeline.append((end, *st.timeline[-1][1:]))
    # Steps are committed whole, so a transfer is logged when its prompt's step runs, before
    # arrivals during that step: order the log by time (stable: ties keep processing order).
    st.events.sort(key=itemgetter(0))
    fleet = st.fleet
    return FleetResult(
        st.arrival, first, finish, st.inp, st.out,
        instance=dw, prefill_instance=fw if fleet.disaggregated else dw.copy(),
        error=st.error, retries=st.retries, transfer_s=st.xfer, workers=records,
        worker_results=per_worker, events=st.events, timeline=st.timeline, end_s=end,
        gpu_hour_usd=fleet.gpu_hour_usd, disaggregated=fleet.disaggregated)


def _record(w, res, end: float, served: int) -> WorkerRecord:
    """A worker's life; one still draining at the end holds its GPUs to its last finish, one up to
    the run's end."""
    if w.state == "draining":
        fin = res.finish
        stopped = max([w.drain_s] + fin[~np.isnan(fin)].tolist())
    elif w.state in ("up", "starting"):
        stopped = max(end, w.started_s)
    else:
        stopped = w.stopped_s
    return WorkerRecord(w.id, w.pool, w.gpus, w.started_s, w.ready_s, stopped, w.failed_s,
                        w.state if w.state != "draining" else "removed", served)
