"""The compiled colocated fleet: routing and the instances' steps in one loop over the arrivals.

A fleet of one colocated pool of the handbook's rule (``Reserve``, no speculation), without
failures or autoscaling, behind ``round_robin``, ``random``, ``least_requests``, ``least_kv`` or
``power_of_two`` (those classes exactly), is the Python fleet's event loop specialised: its only
events are arrivals, and each arrival reads some instances (advancing them to its time), picks one
and submits the request there. ``fleet_loop`` does that on arrays, calling the engine's own compiled
step rule (``sim._compiled.event_loop``, the same function the single-instance engine runs) for each
instance it reads, so every time is the Python fleet's bit for bit (tests/test_fleet_fast.py runs
both, and tests/test_fleet_vs_plain.py runs this path against the plain fleet). Everything else
(PD, failures, autoscaling, several pools, prefix-aware or session routing, paged KV, speculation,
a router subclass) runs in the Python fleet.

Why: the Python fleet pays an attribute read and, about once per step of each instance, an
``Instance.advance`` call from Python per routing read; least_requests reads every instance at every
arrival, so the fleet cost about 25x the same requests run as independent instances
(benchmarks/bench_fleet.py, the chapter's hour on 16 instances; 4x here). Here a read that finds nothing to run costs a few array loads.

The random routers draw from the router's own ``random.Random``: ``mt_next`` is CPython's
Mersenne Twister (``genrand_uint32``) and ``randbelow`` / ``sample_pair`` are ``Random._randbelow``
and ``Random.sample(range(k), 2)`` written out, started from the router's state; ``plan`` checks
the reproduction against the router's own draws before trusting it (a Python whose ``random``
draws differently falls back to the Python fleet).

Used where the engine compiles (``sim.engine.COMPILE_MIN_REQUESTS``, decided once per fleet run)
and the run is large enough to pay for loading it (``FAST_MIN_REQUESTS``): small fleets stay on
the Python path and never load numba. ``use_fast`` switches it (tests run
both paths; forced on without numba, the same loop runs as plain Python, slowly).
"""

from __future__ import annotations

import math
import random
from itertools import repeat

import numpy as np

from sim import _compiled
from sim._compiled import DONE, F_BW, F_COMM, F_CURVE, F_FLOPS, F_HOST, F_KEEP, F_KV_BYTES, F_KV_RATIO, F_NOW, F_OVERHEAD, F_P, \
    F_SERIAL, F_TWO_P, F_UNTIL, F_W_BYTES, GROW, LOG_FULL, S_ADMITTED, S_BUDGET, S_CONTEXT, S_DECODERS, \
    S_DONE, S_KNOWN, S_KV_CAP, S_KV_USED, S_LAST_DONE, S_LAST_KV, S_LOG_M, S_MAX_SEQS, S_PF_HEAD, S_RUNNING, \
    S_STEP, S_VISIBLE, W_PF_LEFT, W_PF_R, W_STEP, FastState, _curve_seconds, _event_loop, _smooth_max
from sim._jit import compile_all
from sim.fleet import routers
from sim.result import SimResult, expand_steps

ROUND_ROBIN, RANDOM, LEAST_REQUESTS, LEAST_KV, POWER_OF_TWO = range(5)
KINDS = {routers.RoundRobin: ROUND_ROBIN, routers.Random: RANDOM, routers.LeastRequests: LEAST_REQUESTS,
         routers.LeastKV: LEAST_KV, routers.PowerOfTwo: POWER_OF_TWO}
ROOM = 100                    # fleet_loop's status: instance i's request arrays are full
LOG_CAP = 8192                # step-log entries buffered per instance between flushes
WORK_CAP = 512                # running requests the work rows first hold (they double as needed)
# "auto" loads the compiled fleet for a run of at least this many requests (when the engine compiles
# it): loading costs ~0.1 s from numba's cache (a few seconds on a machine's first run, compiling),
# and saves ~10 us per request behind least_requests or power_of_two, ~1 us behind round_robin
# (measured on the chapter's instance); once loaded, every run the engine compiles uses it.
FAST_MIN_REQUESTS = 20_000
_N, _M = 624, 397             # the Mersenne Twister's state size and shift

_mode = "auto"                # "auto" (where the engine compiles), True (wherever eligible), False (never)
_kernels: dict = {}           # compiled (True) / plain (False) kernels, once built


def first_capacity(kind: int, n: int, k: int) -> int:
    """Request slots per instance at the start (doubled when one fills): round robin's share
    exactly, else the share and a quarter more."""
    return -(-n // k) + (0 if kind == ROUND_ROBIN else n // (4 * k) + 16)


def use_fast(enabled) -> None:
    """The compiled fleet always where eligible (True; as plain Python without numba), never
    (False: the Python fleet), or where the engine compiles ("auto", the default)."""
    global _mode
    if enabled not in (True, False, "auto"):
        raise ValueError(f"use_fast takes True, False or 'auto', got {enabled!r}")
    _mode = enabled


# --- the kernels (plain Python, compiled by numba where it is installed) -----------------------

def _mt_next(mt):
    """CPython's genrand_uint32 on mt[:624] (the state words) and mt[624] (the index)."""
    i = mt[_N]
    if i >= _N:
        for kk in range(_N):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % _N] & 0x7fffffff)
            v = mt[(kk + _M) % _N] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908b0df
            mt[kk] = v
        i = 0
    y = mt[i]
    mt[_N] = i + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9d2c5680
    y ^= (y << 15) & 0xefc60000
    y ^= y >> 18
    return y


def _randbelow(mt, n):
    """``Random._randbelow_with_getrandbits(n)``: getrandbits(n.bit_length()) until below n."""
    bits = 0
    while (n >> bits) > 0:
        bits += 1
    r = _mt_next(mt) >> (32 - bits)
    while r >= n:
        r = _mt_next(mt) >> (32 - bits)
    return r


def _sample_pair(mt, n):
    """``Random.sample(range(n), 2)`` (n >= 2): a pool swap up to 21 items, a set above."""
    if n <= 21:
        a = _randbelow(mt, n)
        b = _randbelow(mt, n - 1)
        return a, (n - 1 if b == a else b)
    a = _randbelow(mt, n)
    b = _randbelow(mt, n)
    while b == a:
        b = _randbelow(mt, n)
    return a, b


def _quiet_until(i, F, S, req, work):
    """``Instance.quiet_until`` on instance i's arrays (the handbook's rule): a time before which,
    with nothing more submitted, its figures cannot change; ``now`` where none is known. The same
    conditions and the same float operations, in the same order (its docstring gives the bound)."""
    now, decoders, running = F[i, F_NOW], S[i, S_DECODERS], S[i, S_RUNNING]
    if decoders == 0 or decoders != running:
        return now                                 # idle, or a prompt runs
    head = S[i, S_ADMITTED]
    if head < S[i, S_KNOWN]:                       # a request waits (or will arrive): blocked?
        if (decoders < S[i, S_BUDGET] and running < S[i, S_MAX_SEQS]
                and S[i, S_KV_USED] + req[i, 0, head] + req[i, 1, head] <= S[i, S_KV_CAP]):
            return now
    q = work[i, W_STEP, 0] - S[i, S_STEP]
    if q <= 0:
        return now
    compute = F[i, F_TWO_P] * decoders / F[i, F_FLOPS]
    kv = F[i, F_KV_BYTES] * S[i, S_CONTEXT] / F[i, F_KV_RATIO]
    memory = (F[i, F_W_BYTES] + kv * F[i, F_KEEP]) / F[i, F_BW]
    p, host = F[i, F_P], F[i, F_HOST]
    bound = (memory if memory > compute else compute) if p == 0 else _smooth_max(compute, memory, p)
    comm = F[i, F_COMM]
    per_step = comm * decoders + host * decoders if host else comm * decoders
    if F.shape[1] > F_CURVE:
        per_step = per_step + _curve_seconds(F[i], decoders)
    d = bound + kv * F[i, F_SERIAL] / F[i, F_BW] + F[i, F_OVERHEAD] + per_step
    if d <= (q + 4) * 2.3e-16 * (now + (q + 1) * d):
        return now
    return now + q * d


def _bring(i, t, F, S, arr, req, first, fin, work, log_start, log_i, quiet):
    """Run instance i's steps that start before t (``Instance.advance(t)``) unless t is before
    ``quiet[i]`` (nothing it reports can have changed); returns the engine loop's status (DONE,
    or LOG_FULL / GROW for the caller to act on)."""
    if t < quiet[i]:
        return DONE
    known, visible, now = S[i, S_KNOWN], S[i, S_VISIBLE], F[i, F_NOW]
    while visible < known and arr[i, visible] <= now:
        visible += 1
    S[i, S_VISIBLE] = visible
    if S[i, S_RUNNING] == 0 and S[i, S_ADMITTED] == visible:
        if not (visible < known and arr[i, visible] < t):
            return DONE                            # idle, and nothing arrives before t
    elif now >= t:
        return DONE                                # the step in progress ends at or after t
    F[i, F_UNTIL] = t
    status = _event_loop(F[i], S[i], arr[i], req[i], first[i], fin[i], work[i], log_start[i], log_i[i])
    if status == DONE:
        quiet[i] = _quiet_until(i, F, S, req, work)
    return status


def _fleet_loop(kind, g, F, S, arr, req, first, fin, work, log_start, log_i, quiet, g_arr, g_inp, g_out,
                where, local, mt, ctl):
    """Route requests g, g + 1, ... in arrival order, reading (advancing) the instances the router
    reads, then bring every instance to the end. Returns (status, g, i): DONE; or LOG_FULL / GROW
    (from instance i's step loop) or ROOM (instance i's request arrays are full), with g the request
    to resume from (its reads are repeated, which changes nothing; its draws are kept in ctl)."""
    k, n, cap, inf = F.shape[0], len(g_arr), arr.shape[1], math.inf
    while g < n:
        t = g_arr[g]
        if kind == ROUND_ROBIN:
            i = ctl[0] % k
        elif kind == RANDOM:
            if ctl[1] < 0:
                ctl[1] = _randbelow(mt, k)
            i = ctl[1]
        elif kind == POWER_OF_TWO and k > 1:
            if ctl[1] < 0:
                ctl[1], ctl[2] = _sample_pair(mt, k)
            a, b = ctl[1], ctl[2]
            for j in (a, b):
                status = _bring(j, t, F, S, arr, req, first, fin, work, log_start, log_i, quiet)
                if status != DONE:
                    return status, g, j
            load_a = S[a, S_KNOWN] - S[a, S_DONE] + (S[a, S_LAST_DONE] if F[a, F_NOW] > t else 0)
            load_b = S[b, S_KNOWN] - S[b, S_DONE] + (S[b, S_LAST_DONE] if F[b, F_NOW] > t else 0)
            i = b if load_b < load_a else a
        elif kind == POWER_OF_TWO:
            i = 0
        else:                                      # least_requests, least_kv: every instance
            i, best = -1, 0
            for j in range(k):
                if not t < quiet[j]:               # (_bring's first test, without the call)
                    status = _bring(j, t, F, S, arr, req, first, fin, work, log_start, log_i, quiet)
                    if status != DONE:
                        return status, g, j
                stepping = F[j, F_NOW] > t         # a step in progress: its finishes are not done
                if kind == LEAST_REQUESTS:
                    v = S[j, S_KNOWN] - S[j, S_DONE] + (S[j, S_LAST_DONE] if stepping else 0)
                    better = v < best
                else:
                    v = S[j, S_KV_CAP] - S[j, S_KV_USED] - (S[j, S_LAST_KV] if stepping else 0)
                    better = v > best
                if i < 0 or better:                # ties: the lowest id
                    i, best = j, v
        c = S[i, S_KNOWN]
        if c == cap:
            return ROOM, g, i
        arr[i, c] = t
        req[i, 0, c], req[i, 1, c], req[i, 2, c] = g_inp[g], g_out[g], 0
        S[i, S_KNOWN] = c + 1
        quiet[i] = -inf                            # a submission: its figures may change at once
        where[g], local[g] = i, c
        ctl[0] += 1
        ctl[1] = ctl[2] = -1
        g += 1
    for j in range(k):
        status = _bring(j, inf, F, S, arr, req, first, fin, work, log_start, log_i, quiet)
        if status != DONE:
            return status, g, j
    return DONE, g, -1


def _kernel(compiled: bool):
    """The kernels, {name: function}: compiled (None if numba is missing, disabled or fails on
    them), or the plain Python functions."""
    if compiled not in _kernels:
        plain = {"_fleet_loop": _fleet_loop, "_randbelow": _randbelow, "_sample_pair": _sample_pair}
        if not compiled:
            _kernels[False] = plain
        else:
            engine_specs = [(name, fn, None if name == "_event_loop" else sig, calls)   # (first/fin: arrays)
                            for name, fn, sig, calls in _compiled.SPECS]
            done = compile_all(engine_specs + [
                ("_mt_next", _mt_next, None, ()),
                ("_randbelow", _randbelow, None, ("_mt_next",)),
                ("_sample_pair", _sample_pair, None, ("_randbelow",)),
                ("_quiet_until", _quiet_until, None, ("_smooth_max", "_curve_seconds")),
                ("_bring", _bring, None, ("_event_loop", "_quiet_until")),
                ("_fleet_loop", _fleet_loop, None, ("_bring", "_randbelow", "_sample_pair")),
            ])
            if done is not None:
                try:                                 # typed (compiled, or loaded from numba's cache) now
                    _warm(done)
                except Exception:                    # pragma: no cover - a numba that cannot compile them
                    done = None
            _kernels[True] = None if done is None else {name: done[name] for name in plain}
    return _kernels[compiled]


def _warm(kernels) -> None:
    """Call each kernel once on arrays of the run's types (an empty fleet of one idle instance)."""
    i64 = np.int64
    mt = np.zeros(_N + 1, dtype=i64)
    mt[_N] = _N
    kernels["_sample_pair"](mt, 2)
    kernels["_fleet_loop"](LEAST_REQUESTS, 0, np.zeros((1, F_HOST + 1)), np.zeros((1, S_KV_CAP + 1), dtype=i64),
                           np.zeros((1, 1)), np.zeros((1, 3, 1), dtype=i64), np.zeros((1, 1)), np.zeros((1, 1)),
                           np.zeros((1, 6, 2), dtype=i64), np.zeros((1, 1)), np.zeros((1, 6, 1), dtype=i64),
                           np.zeros(1), np.zeros(0), np.zeros(0, dtype=i64), np.zeros(0, dtype=i64),
                           np.zeros(0, dtype=i64), np.zeros(0, dtype=i64), mt, np.zeros(3, dtype=i64))


# --- the Python side ------------------------------------------------------------------------------

def plan(st):
    """A ``FastFleet`` for this run, or None where the Python fleet runs it."""
    fleet, router = st.fleet, st.router
    if _mode is False or fleet.disaggregated or fleet.pools or fleet.failures or fleet.autoscaler:
        return None
    kind = KINDS.get(type(router))
    setup = fleet.colocated.setup
    if kind is None or setup.kv is not None or setup.speculative is not None:
        return None
    if _mode == "auto" and not (st.compiled and (st.n >= FAST_MIN_REQUESTS or True in _kernels)):
        return None                                # a small run: the Python fleet (no numba, no loading)
    kernels = _kernel(True) if st.compiled else None
    if kernels is None:
        if _mode == "auto":
            return None
        kernels = _kernel(False)
    k = fleet.colocated.instances
    mt = np.zeros(_N + 1, dtype=np.int64)
    mt[:] = router.rng.getstate()[1]
    if kind in (RANDOM, POWER_OF_TWO) and not _draws_match(kernels, router.rng, mt, kind, k):
        return None
    turn = router.turn.get("colocated", 0) if kind == ROUND_ROBIN else 0
    return FastFleet(st, kernels["_fleet_loop"], kind, mt, turn)


def _draws_match(kernels, rng: random.Random, mt, kind: int, k: int) -> bool:
    """Whether the written-out draws equal the router's own for its next few requests."""
    twin, state = random.Random(), mt.copy()
    twin.setstate(rng.getstate())
    for _ in range(8):
        if kind == RANDOM:
            ok = kernels["_randbelow"](state, k) == twin.randrange(k)
        else:
            ok = k == 1 or list(kernels["_sample_pair"](state, k)) == twin.sample(range(k), 2)
        if not ok:
            return False
    return True


class FastFleet:
    """The arrays ``fleet_loop`` works on: one row per instance of the engine's compiled state
    (``sim._compiled.FastState``'s f and s), its requests, work rows and step-log buffer."""

    def __init__(self, st, loop, kind: int, mt, turn: int):
        self.st, self.loop, self.kind, self.mt = st, loop, kind, mt
        self.ctl = np.array([turn, -1, -1], dtype=np.int64)
        setup = st.fleet.colocated.setup
        k, n = st.fleet.colocated.instances, st.n
        base = FastState(setup, None)
        self.F = np.tile(base.f, (k, 1))
        self.S = np.tile(base.s, (k, 1))
        cap = first_capacity(kind, n, k)
        self.arr, self.req = np.zeros((k, cap)), np.zeros((k, 3, cap), dtype=np.int64)
        self.first, self.fin = np.full((k, cap), math.nan), np.full((k, cap), math.nan)
        seats = min(setup.max_num_seqs, setup.max_num_batched_tokens, WORK_CAP) + 1
        self.work = np.zeros((k, base.work.shape[0], seats), dtype=np.int64)
        self.log_start = np.zeros((k, LOG_CAP))
        self.log_i = np.zeros((k, base.log_i.shape[0], LOG_CAP), dtype=np.int64)
        self.logs: list[list] = [[] for _ in range(k)]
        self.quiet = np.full(k, -math.inf)

    def run(self) -> list[SimResult]:
        """Run the fleet; fills the run state's placement and route log, returns each instance's result."""
        st = self.st
        g_arr = np.asarray(st.arrival, dtype=float)
        g_inp, g_out = np.asarray(st.inp, dtype=np.int64), np.asarray(st.out, dtype=np.int64)
        where, local = np.zeros(st.n, dtype=np.int64), np.zeros(st.n, dtype=np.int64)
        g = 0
        while True:
            status, g, i = self.loop(self.kind, g, self.F, self.S, self.arr, self.req, self.first, self.fin,
                                     self.work, self.log_start, self.log_i, self.quiet, g_arr, g_inp, g_out,
                                     where, local, self.mt, self.ctl)
            if status == DONE:
                break
            if status == LOG_FULL:
                self._flush(i)
            elif status == GROW:
                self._grow_work()
            elif status == ROOM:
                self._grow_requests()
            else:                                  # pragma: no cover - no callbacks here
                raise RuntimeError(f"fleet loop: unexpected status {status}")
        st.fw, st.fl, st.dw, st.dl = where, local, where, local
        if st.fleet.log_routes:                     # (time, "route", request, instance, None)
            st.events.extend(zip(st.arrival, repeat("route"), range(st.n), where.tolist(), repeat(None)))
        return [self._result(i) for i in range(self.F.shape[0])]

    def _flush(self, i: int) -> None:
        m = int(self.S[i, S_LOG_M])
        if m:
            self.logs[i].append((self.log_start[i, :m].copy(), self.log_i[i, :, :m].copy()))
            self.S[i, S_LOG_M] = 0

    def _grow_work(self) -> None:
        """Double the work rows (``FastState.grow`` for every instance: each prefill ring unrolled)."""
        work, S = self.work, self.S
        cap = work.shape[2]
        for i in range(work.shape[0]):
            order = (S[i, S_PF_HEAD] + np.arange(cap)) % cap
            work[i, W_PF_R], work[i, W_PF_LEFT] = work[i, W_PF_R, order], work[i, W_PF_LEFT, order]
            S[i, S_PF_HEAD] = 0
        self.work = np.concatenate((work, np.zeros_like(work)), axis=2)

    def _grow_requests(self) -> None:
        more = max(self.arr.shape[1], 8)
        grow = lambda a, fill: np.concatenate((a, np.full(a.shape[:-1] + (more,), fill, dtype=a.dtype)), axis=-1)
        self.arr, self.req = grow(self.arr, 0), grow(self.req, 0)
        self.first, self.fin = grow(self.first, math.nan), grow(self.fin, math.nan)

    def _result(self, i: int) -> SimResult:
        """Instance i's ``SimResult``, as ``Instance.result`` builds it."""
        self._flush(i)
        c = int(self.S[i, S_KNOWN])
        chunks = self.logs[i]
        start = np.concatenate([s for s, _ in chunks]) if chunks else np.zeros(0)
        rows = np.concatenate([r for _, r in chunks], axis=1) if chunks else np.zeros((6, 0), dtype=np.int64)
        setup = self.st.fleet.colocated.setup
        return SimResult(self.arr[i, :c].copy(), self.first[i, :c].copy(), self.fin[i, :c].copy(),
                         self.req[i, 0, :c].copy(), self.req[i, 1, :c].copy(),
                         step_runs=lambda: expand_steps(setup, start, *rows, extra={}, flags={}), counters={})
