"""The handbook's step rule specialised onto arrays, for numba to compile (``sim._jit``).

``event_loop`` is ``sim.engine.Instance.advance`` for the handbook's rule (``Reserve``, no prefix
cache, no speculation), written onto numpy arrays: the same step rule (the numbered rule in
sim/engine.py's docstring), the same float operations in the same order, so the times are the
Python loop's bit for bit (tests/test_engine_vs_reference.py runs both paths against the plain
references). ``quiet_loop`` is a quiet run, shared with the Python path. This module imports
nothing from the engine; the engine drives it through ``FastState.advance``.

State lives in two arrays: f (float64) and s (int64), indexed by the names below; a Setup with a
``comm_curve`` appends its knots to f (``F_CURVE``: the tokens, the seconds, the slopes, n each).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from sim._jit import compile_all
from sim.setup import curve_arrays

if TYPE_CHECKING:
    from sim.setup import Setup


def _smooth_max(a, b, p):
    """``sim.setup.smooth_max`` written out (the same squarings and square roots)."""
    a, b = a * a, b * b
    if p == 2:
        return math.sqrt(a + b)
    a, b = a * a, b * b
    if p == 4:
        return math.sqrt(math.sqrt(a + b))
    a, b = a * a, b * b
    return math.sqrt(math.sqrt(math.sqrt(a + b)))


def _quiet_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio, w_bytes,
                keep, serial, bw, overhead, p):
    """``Setup.step_time(decoders, c)`` written out (same operations, same order), step by step: a
    call and a builtin max() per step would cost more than the step itself. The Python path runs
    it as it is; ``build`` compiles this very function."""
    t, c, k = now, context, 0
    while k < quiet:
        kv = kv_bytes * c / kv_ratio
        memory = (w_bytes + kv * keep) / bw
        if p == 0:
            t += (memory if memory > compute else compute) + kv * serial / bw + overhead + comm_d
        else:
            t += _smooth_max(compute, memory, p) + kv * serial / bw + overhead + comm_d
        c += decoders
        k += 1
        if limit <= t:
            break
    return t, c, k


def _curve_seconds(f, tokens):
    """``Setup.comm_seconds(tokens)`` on the knots f[F_CURVE:] holds (tokens, seconds, slopes: n
    each; none without a curve, then 0): the same operations on the same floats."""
    n = (len(f) - F_CURVE) // 3
    if n == 0:
        return 0.0
    lo, hi = 0, n                                  # bisect_right over the knots' tokens
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens < f[F_CURVE + mid]:
            hi = mid
        else:
            lo = mid + 1
    i = lo - 1
    if i < 0:
        return f[F_CURVE + n]
    return f[F_CURVE + n + i] + (tokens - f[F_CURVE + i]) * f[F_CURVE + 2 * n + i]


F_NOW, F_UNTIL, F_TWO_P, F_FLOPS, F_ATTN, F_ATTN_FLOPS, F_KV_BYTES, F_KV_RATIO, F_KEEP, F_SERIAL, \
    F_W_BYTES, F_BW, F_OVERHEAD, F_COMM, F_P, F_HOST = range(16)
F_CURVE = 16                         # where a comm_curve's knots start in f
S_STEP, S_VISIBLE, S_ADMITTED, S_DECODERS, S_RUNNING, S_CONTEXT, S_KV_USED, S_DONE, S_LAST_DONE, \
    S_LAST_KV, S_KNOWN, S_ANY_PRE, S_ON_FINISH, S_PF_HEAD, S_PF_LEN, S_HEAP_N, S_LOG_M, S_BUDGET, \
    S_MAX_SEQS, S_KV_CAP = range(20)
S_SCALARS = S_ON_FINISH + 1          # the ones copied from and back to the Instance's attributes
DONE, LOG_FULL, FINISHED, GROW = range(4)   # why _event_loop returned
LOG_CAP = 4096                               # step-log entries buffered per call
W_STEP, W_R, W_PF_R, W_PF_LEFT, W_COMPLETED, W_FREED = range(6)   # the rows of FastState.work


class FastState:
    """The compiled loop's arrays: requests (arrival; input, output, prefilled), ``work`` (rows W_*:
    the finish heap of (step, request), the prefill queue as a ring of (request, prompt tokens
    left), the step's completed prompts and finishes) and the step log."""

    def __init__(self, setup: Setup, loop):
        self.loop = loop                 # the compiled _event_loop (kept: use_compiled may change)
        self.f = np.zeros(F_CURVE)
        self.f[F_TWO_P:] = (2 * setup.params, setup.peak_flops * setup.mfu, setup.attn_flops_per_pair,
                            setup.peak_flops * setup.attn_mfu, setup.kv_bytes_per_token,
                            setup.kv_bandwidth_ratio, 1 - setup.kv_serial, setup.kv_serial,
                            setup.weight_bytes, setup.bandwidth, setup.step_overhead, setup.comm_s_per_token,
                            setup.roofline_p, setup.host_s_per_seq)
        if setup.comm_curve is not None:
            self.f = np.concatenate((self.f, *curve_arrays(setup.comm_curve)))
        self.s = np.zeros(20, dtype=np.int64)
        self.s[S_BUDGET:] = (setup.max_num_batched_tokens, setup.max_num_seqs, setup.kv_capacity_tokens)
        self.synced = 0
        self.arr = np.zeros(0)
        self.req = np.zeros((3, 0), dtype=np.int64)
        cap = min(setup.max_num_seqs, setup.max_num_batched_tokens, 64) + 1
        self.work = np.zeros((6, cap), dtype=np.int64)
        self.log_start = np.zeros(LOG_CAP)
        self.log_i = np.zeros((6, LOG_CAP), dtype=np.int64)

    def sync(self, inst) -> None:
        """Copy the requests submitted since the last call."""
        a, n = self.synced, len(inst.arr)
        if n > len(self.arr):
            size = max(n, 2 * len(self.arr), 256)
            self.arr = np.concatenate((self.arr, np.zeros(size - len(self.arr))))
            self.req = np.concatenate((self.req, np.zeros((3, size - self.req.shape[1]), dtype=np.int64)), axis=1)
        self.arr[a:n] = inst.arr[a:n]
        self.req[0, a:n] = inst.inp[a:n]
        self.req[1, a:n] = inst.out[a:n]
        self.req[2, a:n] = inst.pre[a:n]
        self.synced = n

    def grow(self) -> None:
        """Double the per-running-request arrays (the prefill ring is unrolled from its head)."""
        cap, s, work = self.work.shape[1], self.s, self.work
        order = (s[S_PF_HEAD] + np.arange(cap)) % cap
        work[W_PF_R], work[W_PF_LEFT] = work[W_PF_R, order], work[W_PF_LEFT, order]
        s[S_PF_HEAD] = 0
        self.work = np.concatenate((work, np.zeros((6, cap), dtype=np.int64)), axis=1)

    def next_finish_step(self) -> int:
        """The step at whose end the next decoder finishes (the finish heap's head; some decode)."""
        return int(self.work[W_STEP, 0])

    def flush(self, inst) -> None:
        """Append the buffered step log to the Instance's run-length log."""
        m = int(self.s[S_LOG_M])
        inst.log_start.frombytes(self.log_start[:m].tobytes())
        for row, log in enumerate((inst.log_tokens, inst.log_ctx0, inst.log_grow, inst.log_dec,
                                   inst.log_count, inst.log_pairs)):
            log.frombytes(self.log_i[row, :m].tobytes())
        self.s[S_LOG_M] = 0

    def advance(self, inst, until: float) -> None:
        """``advance`` through the compiled ``_event_loop`` (the handbook's rule only). The loop
        returns to Python to flush its step log, to grow its buffers, and after each step with
        finishes when ``on_finish`` is set (the callbacks run here, as in ``advance``)."""
        fast, arr, on_finish, now = self, inst.arr, inst.on_finish, inst.now
        # The loop's first lines, when they end the call (a driver often asks for no step at all).
        known, visible = len(arr), inst.visible
        while visible < known and arr[visible] <= now:
            visible += 1
        if inst.running == 0 and inst.admitted == visible:
            stop = not (visible < known and arr[visible] < until)   # idle, and no arrival before until
        else:
            stop = now >= until
        if stop:
            inst.visible = visible
            return
        f, s = fast.f, fast.s
        f[F_NOW], f[F_UNTIL] = now, until
        s[:S_SCALARS] = (inst.step, visible, inst.admitted, inst.decoders, inst.running, inst.context,
                         inst.kv.used, inst.done, inst.last_done, inst.last_kv, known,
                         inst.any_prefilled, on_finish is not None)
        while True:
            if fast.synced < len(arr):
                fast.sync(inst)
                s[S_KNOWN] = len(arr)
            status = fast.loop(f, s, fast.arr, fast.req, inst.first, inst.fin, fast.work, fast.log_start,
                               fast.log_i)
            if s[S_LOG_M]:
                fast.flush(inst)
            if status == FINISHED:
                inst.now = now = float(f[F_NOW])       # the callback may look at the instance
                for r in fast.work[W_FREED, :s[S_LAST_DONE]].tolist():
                    on_finish(r, now)
            elif status == GROW:
                fast.grow()
            elif status == DONE:
                break
        (inst.step, inst.visible, inst.admitted, inst.decoders, inst.running, inst.context, inst.kv.used,
         inst.done, inst.last_done, inst.last_kv) = s[:S_KNOWN].tolist()
        inst.now = float(f[F_NOW])

def _event_loop(f, s, arr, req, first, fin, work, log_start, log_i):
    """``Instance.advance``'s loop for the handbook's rule, on arrays (see above); returns DONE, or
    LOG_FULL / GROW / FINISHED (on_finish set and the last step had finishes: their ids are in
    work[W_FREED, :last_done]) for the caller to act on and call again."""
    inp, out, pre = req[0], req[1], req[2]
    heap_step, heap_r, pf_r, pf_left = work[W_STEP], work[W_R], work[W_PF_R], work[W_PF_LEFT]
    completed_r, freed_r = work[W_COMPLETED], work[W_FREED]
    now, until = f[F_NOW], f[F_UNTIL]
    two_p, flops, attn, attn_flops = f[F_TWO_P], f[F_FLOPS], f[F_ATTN], f[F_ATTN_FLOPS]
    kv_bytes, kv_ratio, keep, serial = f[F_KV_BYTES], f[F_KV_RATIO], f[F_KEEP], f[F_SERIAL]
    w_bytes, bw, overhead, comm = f[F_W_BYTES], f[F_BW], f[F_OVERHEAD], f[F_COMM]
    p, host, curve = f[F_P], f[F_HOST], len(f) > F_CURVE
    step, visible, admitted, decoders = s[S_STEP], s[S_VISIBLE], s[S_ADMITTED], s[S_DECODERS]
    running, context, kv_used, done = s[S_RUNNING], s[S_CONTEXT], s[S_KV_USED], s[S_DONE]
    last_done, last_kv, known, any_pre = s[S_LAST_DONE], s[S_LAST_KV], s[S_KNOWN], s[S_ANY_PRE]
    pf_head, pf_len, heap_n, m = s[S_PF_HEAD], s[S_PF_LEN], s[S_HEAP_N], s[S_LOG_M]
    budget_max, max_seqs, kv_cap = s[S_BUDGET], s[S_MAX_SEQS], s[S_KV_CAP]
    cap, log_cap = len(heap_r), len(log_start)
    status = DONE
    while True:
        while visible < known and arr[visible] <= now:
            visible += 1
        if running == 0 and admitted == visible:
            if visible < known and arr[visible] < until:
                now = arr[visible]
                continue
            break
        if now >= until:
            break
        if m == log_cap:
            status = LOG_FULL
            break
        if min(max_seqs, running + budget_max) >= cap:
            status = GROW
            break

        # A quiet run: only decoders run and no admission can happen before the next finish.
        if pf_len == 0 and decoders and (
                admitted == visible or decoders >= budget_max or running >= max_seqs
                or kv_used + inp[admitted] + out[admitted] > kv_cap):
            quiet = heap_step[0] - step                # steps before the next finishing step
            if quiet > 0:
                limit = arr[visible] if admitted == visible and visible < known else math.inf
                if until < limit:
                    limit = until
                comm_d = comm * decoders + host * decoders if host else comm * decoders
                if curve:
                    comm_d = comm_d + _curve_seconds(f, decoders)
                t, c, k = _quiet_loop(now, context, decoders, quiet, limit, two_p * decoders / flops,
                                      comm_d, kv_bytes, kv_ratio, w_bytes, keep, serial, bw, overhead, p)
                log_start[m] = now
                log_i[0, m], log_i[1, m], log_i[2, m] = decoders, context, decoders
                log_i[3, m], log_i[4, m], log_i[5, m] = decoders, k, 0
                m += 1
                now, context, step = t, c, step + k
                last_done = last_kv = 0
                continue

        # An event step: the general rule, touching only the head of the prefill queue.
        budget, tokens, pairs, completed, pf_head, pf_len = _prefill_chunks(
            inp, pf_r, pf_left, completed_r, pf_head, pf_len, cap, budget_max - decoders, decoders)
        (budget, tokens, pairs, completed, pf_len, running, admitted, kv_used, context, decoders,
         heap_n) = _admit(inp, out, pre, any_pre, heap_step, heap_r, pf_r, pf_left, completed_r, cap,
                          pf_head, step, visible, max_seqs, kv_cap, budget, tokens, pairs, completed,
                          pf_len, running, admitted, kv_used, context, decoders, heap_n)
        log_start[m] = now
        log_i[0, m], log_i[1, m], log_i[2, m] = tokens, context, 0
        log_i[3, m], log_i[4, m], log_i[5, m] = decoders, 1, pairs
        m += 1
        # Setup.step_time(tokens, context, pairs, decoders), written out: same operations, same order
        compute = two_p * tokens / flops
        if attn:
            compute = compute + attn * pairs / attn_flops
        kv = kv_bytes * context / kv_ratio
        memory = (w_bytes + kv * keep) / bw
        bound = (memory if memory > compute else compute) if p == 0 else _smooth_max(compute, memory, p)
        per_step = comm * tokens + host * decoders if host else comm * tokens
        if curve:
            per_step = per_step + _curve_seconds(f, tokens)
        now += bound + kv * serial / bw + overhead + per_step
        context += tokens
        (freed, last_kv, heap_n, decoders, context, kv_used, running, done) = _end_step(
            inp, out, first, fin, heap_step, heap_r, completed_r, freed_r, completed, now, step,
            heap_n, decoders, context, kv_used, running, done)
        last_done = freed
        step += 1
        if s[S_ON_FINISH] and freed:
            status = FINISHED
            break

    f[F_NOW] = now
    s[S_STEP], s[S_VISIBLE], s[S_ADMITTED], s[S_DECODERS] = step, visible, admitted, decoders
    s[S_RUNNING], s[S_CONTEXT], s[S_KV_USED], s[S_DONE] = running, context, kv_used, done
    s[S_LAST_DONE], s[S_LAST_KV] = last_done, last_kv
    s[S_PF_HEAD], s[S_PF_LEN], s[S_HEAP_N], s[S_LOG_M] = pf_head, pf_len, heap_n, m
    return status


def _prefill_chunks(inp, pf_r, pf_left, completed_r, pf_head, pf_len, cap, budget, tokens):
    """Rule 2's prompts on the prefill ring; returns (budget, tokens, pairs, completed, head, len)."""
    pairs = 0
    completed = 0                                  # their ids: completed_r[:completed]
    j = 0
    while j < pf_len:
        e = (pf_head + j) % cap
        give = min(pf_left[e], budget)
        if give <= 0:
            break
        budget -= give
        tokens += give
        r = pf_r[e]
        pairs += give * (inp[r] - pf_left[e]) + give * (give + 1) // 2    # attention_pairs(done, give)
        pf_left[e] -= give
        if pf_left[e] == 0:
            completed_r[completed] = r
            completed += 1
        j += 1
    return budget, tokens, pairs, completed, (pf_head + completed) % cap, pf_len - completed


def _admit(inp, out, pre, any_pre, heap_step, heap_r, pf_r, pf_left, completed_r, cap, pf_head, step,
           visible, max_seqs, kv_cap, budget, tokens, pairs, completed, pf_len, running, admitted,
           kv_used, context, decoders, heap_n):
    """Rule 3 with the reservation: the queue's head while its whole KV fits."""
    while budget > 0 and running < max_seqs and admitted < visible:
        r = admitted
        if kv_used + inp[r] + out[r] > kv_cap:
            break
        kv_used += inp[r] + out[r]
        running += 1
        admitted += 1
        if any_pre and pre[r]:
            # Arrives with its prompt's KV: a decoder from this step on (its 2nd token).
            budget -= 1
            tokens += 1
            context += inp[r] + 1
            decoders += 1
            heap_n = _heap_push(heap_step, heap_r, heap_n, step + out[r] - 2, r)
            continue
        left = inp[r]
        give = min(left, budget)
        budget -= give
        tokens += give
        pairs += give * (give + 1) // 2            # attention_pairs(0, give)
        if give == left:
            completed_r[completed] = r
            completed += 1
        else:
            e = (pf_head + pf_len) % cap
            pf_r[e], pf_left[e] = r, left - give
            pf_len += 1
    return budget, tokens, pairs, completed, pf_len, running, admitted, kv_used, context, decoders, heap_n


def _end_step(inp, out, first, fin, heap_step, heap_r, completed_r, freed_r, completed, now, step,
              heap_n, decoders, context, kv_used, running, done):
    """Rule 5: finishing decoders and completed prompts; the finished ids go to freed_r."""
    freed = 0                                      # their ids: freed_r[:freed]
    while heap_n and heap_step[0] == step:
        freed_r[freed] = heap_r[0]
        freed += 1
        heap_n = _heap_pop(heap_step, heap_r, heap_n)
        decoders -= 1
    for i in range(completed):
        r = completed_r[i]
        if first[r] != first[r]:                   # NaN: its first token
            first[r] = now
        context += 1
        if out[r] == 1:
            freed_r[freed] = r
            freed += 1
        else:
            heap_n = _heap_push(heap_step, heap_r, heap_n, step + out[r] - 1, r)
            decoders += 1
    last_kv = 0
    for i in range(freed):
        r = freed_r[i]
        fin[r] = now
        context -= inp[r] + out[r]
        kv_used -= inp[r] + out[r]
        last_kv += inp[r] + out[r]
        running -= 1
        done += 1
    return freed, last_kv, heap_n, decoders, context, kv_used, running, done


def _heap_push(steps, rs, n, step, r):
    """heapq.heappush of (step, r) onto the heap held in steps[:n], rs[:n]; returns the new size."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if steps[parent] < step or (steps[parent] == step and rs[parent] <= r):
            break
        steps[i], rs[i] = steps[parent], rs[parent]
        i = parent
    steps[i], rs[i] = step, r
    return n + 1


def _heap_pop(steps, rs, n):
    """heapq.heappop of the smallest (step, r) (at 0) from steps[:n], rs[:n]; returns the new size."""
    n -= 1
    step, r = steps[n], rs[n]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and (steps[child + 1] < steps[child]
                              or (steps[child + 1] == steps[child] and rs[child + 1] < rs[child])):
            child += 1
        if step < steps[child] or (step == steps[child] and r <= rs[child]):
            break
        steps[i], rs[i] = steps[child], rs[child]
        i = child
    steps[i], rs[i] = step, r
    return n


QUIET_SIGNATURE = ("Tuple((float64, int64, int64))(float64, int64, int64, int64, float64, float64, float64, "
                   "float64, float64, float64, float64, float64, float64, float64, float64)")


def _event_signature(numba):
    """(f, s, arrival, req, first, fin, work, log_start, log_i): numpy arrays, and the Instance's own
    ``array('d')`` of first-token and finish times (numba reads and writes them in place)."""
    from array import array
    t = numba.types
    f64, i64, i64_2d, times = t.float64[::1], t.int64[::1], t.int64[:, ::1], numba.typeof(array("d"))
    return t.int64(f64, i64, f64, i64_2d, times, times, i64_2d, f64, i64_2d)


# What ``build`` compiles, in dependency order (``sim._jit.compile_all``'s specs); the compiled
# fleet (sim/fleet/fast.py) compiles the same functions for its own arrays.
SPECS = [
    ("_smooth_max", _smooth_max, "float64(float64, float64, float64)", ()),
    ("_quiet_loop", _quiet_loop, QUIET_SIGNATURE, ("_smooth_max",)),
    ("_curve_seconds", _curve_seconds, "float64(float64[::1], int64)", ()),
    ("_heap_push", _heap_push, "int64(int64[::1], int64[::1], int64, int64, int64)", ()),
    ("_heap_pop", _heap_pop, "int64(int64[::1], int64[::1], int64)", ()),
    ("_prefill_chunks", _prefill_chunks, None, ()),
    ("_admit", _admit, None, ("_heap_push",)),
    ("_end_step", _end_step, None, ("_heap_push", "_heap_pop")),
    ("_event_loop", _event_loop, _event_signature,
     ("_smooth_max", "_quiet_loop", "_curve_seconds", "_prefill_chunks", "_admit", "_end_step")),
]


def build():
    """The compiled ``(quiet_loop, event_loop)``, or None when numba is missing or disabled."""
    done = compile_all(SPECS)
    return None if done is None else (done["_quiet_loop"], done["_event_loop"])
