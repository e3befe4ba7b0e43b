"""The fast engine: the handbook's step rule, with aggregates instead of per-request loops.

The step rule (one step of one serving instance):

1. Requests whose ``arrival <= now`` join a FIFO waiting queue. If nothing waits or runs, ``now``
   jumps to the next arrival.
2. Budget = ``max_num_batched_tokens``. Running requests, in admission order: a decoding request
   takes 1 token (even past the budget); one still in prefill takes ``min(remaining prompt,
   budget)``; the first that would take 0 or fewer ends the pass.
3. While budget > 0 and fewer than ``max_num_seqs`` run, admit the queue's head if its whole
   reservation (``input_len + output_len`` tokens of KV) fits; it takes ``min(input_len, budget)``.
4. The step lasts ``Setup.step_time(tokens, context, pairs)``, context being the KV held before the
   step and pairs the prompt chunks' (query, key) attention pairs (``setup.attention_pairs``).
5. At the step's end: prompt chunks advance, a completed prompt emits the first token, each decoding
   request emits one token, and a request with all its tokens finishes and frees its reservation.

The memory features (``Setup.kv``, ``prefix_cache``, ``speculative``; all off by default) change
steps 3-5 only, and only through ``sim.kv.paged.BlockManager`` (the scheduler never sees a block):

- paged (sim/kv/paged.py): before step 2, decoders whose blocks are full need one; while they
  outnumber the free blocks, the most recently admitted running request is preempted (back to
  the queue's head; recompute: it will prefill its prompt and generated tokens again, whose end
  emits its next token; swap: its KV goes to host memory and comes back, the copies' seconds added
  to the steps that make them), and that step admits no one. Admission (3) needs the prompt's
  blocks, less prefix-cache hits, and the watermark free, instead of the whole reservation;
- prefix cache (sim/kv/prefix_cache.py): at admission the cached tokens count as computed (they
  are in the context, and the prompt's chunks start after them); a host-tier hit adds its read-back
  seconds to the step;
- speculative (sim/speculative.py): a decoder takes k + 1 tokens of the step (2) and emits its drawn
  1 + accepted tokens (5); the drafts' seconds are added to the step (4).

Why aggregates suffice: prompts complete in admission order (a later request gets prompt tokens only
in a step where every earlier prompt completes), so the running list is always the decoding requests
followed by the prefilling ones, and decoders are never cut off. A step therefore needs only the
number of decoders ``D``, the context sum, and the few prompts at the head of the prefill queue.
Between events (an arrival that can be admitted, a prompt chunk, a finish) every step computes ``D``
tokens over a context that grows by ``D``: such a quiet run is advanced in a tight loop that does the
same float operations in the same order as the plain loop, so the times are bit-for-bit equal.
With paged KV a quiet run also stops before the step whose new blocks would not fit (decoders are
counted per block phase, so every step's new blocks are known without touching a request); a
queue head that the prefix lookup may admit makes the step an event step; with speculative
decoding every step is an event step (each decoder's tokens per step are drawn). Event steps of
decoders only do the quiet run's arithmetic, so taking more of them never changes a time.

Compiled: with numba installed (sim/_compiled.py), the quiet runs are compiled, and an instance with
none of the memory features runs its whole loop compiled: ``_event_loop`` is ``Instance.advance``'s
loop for the rule above, transcribed line for line onto arrays (same operations, same order).
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from typing import Sequence

import numpy as np

from sim.result import READBACK, RECOMPUTE, SWAP, SimResult, StepLog
from sim.kv.paged import BlockManager
from sim.setup import Setup, attention_pairs

VECTOR_MIN_STEPS = 128       # quiet runs at least this long are advanced with numpy (measured crossover)


def run_requests(setup: Setup, arrival: Sequence[float] | None, input_len: Sequence[int],
                 output_len: Sequence[int], *, concurrency: int | None = None,
                 think_s: float = 0.0, prefix=None) -> SimResult:
    """Simulate requests through one instance.

    Open loop: ``arrival`` holds each request's arrival time, nondecreasing. Closed loop
    (``concurrency`` given, ``arrival`` None): the first ``concurrency`` requests arrive at t = 0 and
    every finish sends the next request ``think_s`` later. Lengths are per request. Inputs are
    assumed validated (see ``sim.simulate`` and ``sim.workload``).
    """
    inp = list(map(int, input_len))
    out = list(map(int, output_len))
    n = len(inp)
    if concurrency is None:
        instance = Instance(setup)
        instance.submit_many(list(map(float, arrival)), inp, out, prefix=list(prefix) if prefix else None)
    else:
        first = min(concurrency, n)
        # closed loop: each finish issues the next request think_s later, from inside the step loop
        def issue_next(_request, now):
            k = len(instance.arr)
            if k < n:
                instance.submit(now + think_s, inp[k], out[k])
        instance = Instance(setup, on_finish=issue_next)
        instance.submit_many([0.0] * first, inp[:first], out[:first])
    instance.advance()
    return instance.result()


class Instance:
    """One serving instance that can be advanced to a time, take a request at any moment, and say
    what state it is in: the step rule above, resumable.

        inst = Instance(setup)
        inst.submit(arrival, input_len, output_len)   # returns the request's local id (0, 1, ...)
        inst.advance(until)                           # run every step that starts before `until`
        inst.next_time()                              # start of the next step, inf when idle
        inst.result()                                 # a SimResult of everything submitted

    Arrivals must be submitted in nondecreasing order, and every request arriving at or before a
    step's start must be submitted before that step runs: a driver that submits at time t after
    ``advance(t)`` gets exactly the single-instance engine (``run_requests`` is such a driver). A
    request arriving while a step runs joins at the next step boundary (``arrival <= now``).

    ``advance`` commits whole steps: the last step it runs may end after ``until``. The state
    accessors take the time ``t`` they are asked at and count such a step's finishes as not yet
    done, so a router sees what a gateway sees at ``t``.

    A request submitted with ``prefilled=True`` brings its prompt's KV (PD disaggregation's decode
    side): at admission it reserves input + output tokens as usual, takes 1 token of budget, is a
    decoder from that step on (its first decode step produces its second token), and adds its
    prompt plus first token (``input_len + 1``) to the context read by that step.

    ``on_finish(local_id, time)`` is called as each finish is committed; it may submit requests
    (arriving at or after ``time``), which the next step start sees.
    The KV seam: with the handbook's rule the scheduler reserves a whole request's KV at admission
    (``kv_used + need <= capacity``) and frees it at its finish. With ``Setup.kv`` paged those
    become calls to ``sim.kv.paged.BlockManager`` (admit, start/stop decoding, the step's new
    blocks, release); the scheduler never touches a block. ``prefix`` (per request) names its
    content for the prefix cache; ``cached_prefix_tokens`` is what a prefix-aware router asks.
    """

    def __init__(self, setup: Setup, *, on_finish=None):
        self.setup = setup
        self.on_finish = on_finish
        self.arr: list[float] = []
        self.inp: list[int] = []
        self.out: list[int] = []
        self.pre: list[int] = []          # 1 where the request arrives prefilled
        self.first = array("d")
        self.fin = array("d")
        self.now = 0.0
        self.step = 0                     # index of the next step
        self.visible = 0                  # requests [0, visible) have arrived by now
        self.admitted = 0                 # [0, admitted) were admitted (FIFO): waiting = [admitted, visible)
        self.prefill: deque[list[int]] = deque()   # [request, prompt tokens left], admission order
        self.finishes: list[tuple[int, int]] = []  # heap of (step at whose end it finishes, request)
        self.decoders = 0                 # D: running requests past their prompt
        self.running = 0
        self.context = 0                  # sum over running of (prompt tokens computed + tokens generated)
        self.kv_used = 0                  # reserved tokens
        self.done = 0
        self.any_prefilled = False
        self.last_done = 0                # requests finished at the end of the last step run,
        self.last_kv = 0                  # and the KV tokens they freed
        # Run-length step log: each entry is `count` steps from `start`, each computing `tokens`
        # tokens over a context that starts at `ctx0` and grows by `grow` per step, with `dec`
        # decoders. Event steps also log their prompt chunks' attention pairs (quiet runs have none).
        self.log_start = array("d")
        (self.log_tokens, self.log_ctx0, self.log_grow, self.log_dec, self.log_count,
         self.log_pairs) = (array("q") for _ in range(6))
        # Features (sim/kv, sim/speculative), all off by default. Event steps may add seconds beyond
        # the roofline (read-back, swap, drafts) and carry flags; both are logged sparsely by index.
        self.prefix: list = []            # paged: per request, prefix identity (sim/kv/prefix_cache.py) or None
        self.kvm = BlockManager(setup) if setup.kv is not None else None
        self.spec = setup.speculative
        self.win, self.wout = self.inp, self.out   # the current attempt's prompt and outputs
        if self.kvm is not None:                   # (a recomputed request prefills its output too)
            self.win, self.wout = [], []
        self.requeued: deque[int] = deque()        # preempted, back at the queue's head
        self.fstep: dict[int, int] = {}            # paged: decoder -> step at whose end it finishes
        self.run_order: dict[int, None] = {}       # paged: running requests in admission order
        self.swapped: dict[int, tuple] = {}        # swap: request -> (KV tokens, generated, prompt done)
        self.spec_growth: dict[int, int] = {}      # speculative: step -> tokens its decoders emit
        self.stats: dict[str, list] = {}           # per-request feature counters (see result())
        if self.kvm is not None:
            self.stats.update(preemptions=[], cached_tokens=[], host_tokens=[], prompt_tokens=[])
        if self.spec is not None:
            self.stats.update(spec_steps=[])
        self.log_extra: dict[int, float] = {}
        self.log_flags: dict[int, int] = {}
        # The handbook's rule runs in the compiled event loop when numba is on (``_event_loop``);
        # any feature, or no numba, runs the Python loop of ``advance``.
        _ensure_compiled()
        self._fast = (_FastState(setup, _compiled_event) if _compiled_event is not None and self.kvm is None
                     and self.spec is None else None)

    # --- taking requests ---------------------------------------------------------------------

    def submit(self, arrival: float, input_len: int, output_len: int, *, prefilled: bool = False,
               prefix=None) -> int:
        """Queue a request arriving at ``arrival``; returns its local id (submission order).
        ``prefix``: its prefix identity for a prefix cache (``sim.kv.prefix_cache``)."""
        if self.arr and arrival < self.arr[-1]:
            raise ValueError(f"arrival must be nondecreasing per instance: {arrival!r} after {self.arr[-1]!r}")
        if prefilled:
            if output_len < 2:
                raise ValueError(f"output_len of a prefilled request must be >= 2 (its first token came "
                                 f"with the prompt), got {output_len!r}")
            self.any_prefilled = True
        self.arr.append(arrival)
        self.inp.append(input_len)
        self.out.append(output_len)
        self.pre.append(1 if prefilled else 0)
        self.first.append(math.nan)
        self.fin.append(math.nan)
        if self.kvm is not None:                   # (only a prefix cache reads it)
            self.prefix.append(prefix)
        self._grow_features(1, [input_len], [output_len])
        return len(self.arr) - 1

    def submit_many(self, arrival: list[float], input_len: list[int], output_len: list[int],
                    prefix=None) -> None:
        """``submit`` for many requests at once (not prefilled; arrivals nondecreasing)."""
        n = len(arrival)
        self.arr.extend(arrival)
        self.inp.extend(input_len)
        self.out.extend(output_len)
        self.pre.extend([0] * n)
        self.first.extend(array("d", [math.nan]) * n)
        self.fin.extend(array("d", [math.nan]) * n)
        if self.kvm is not None:
            self.prefix.extend(prefix if prefix is not None else [None] * n)
        self._grow_features(n, input_len, output_len)

    def _grow_features(self, n, input_len, output_len) -> None:
        if self.win is not self.inp:
            self.win.extend(input_len)
            self.wout.extend(output_len)
        for values in self.stats.values():
            values.extend([0] * n)

    # --- state, as a gateway sees it at time t ------------------------------------------------

    def next_time(self) -> float:
        """When the next step starts: now if work is waiting or running, the next submitted
        arrival if idle, inf if nothing is left."""
        if self.running or self.admitted < self.visible or self.requeued:
            return self.now
        if self.visible < len(self.arr):
            return max(self.now, self.arr[self.visible])
        return math.inf

    def outstanding(self, t: float) -> int:
        """Requests submitted and not finished at time t (waiting, running, or not yet arrived)."""
        return len(self.arr) - self.done + (self.last_done if self.now > t else 0)

    def running_at(self, t: float) -> int:
        return self.running + (self.last_done if self.now > t else 0)

    def queue_len(self) -> int:
        """Requests submitted but not yet admitted."""
        return len(self.arr) - self.admitted + len(self.requeued)

    def free_kv_tokens(self, t: float) -> int:
        if self.kvm is not None:               # free blocks now (cached ones count as free)
            return self.kvm.free_blocks() * self.kvm.B
        return self.setup.kv_capacity_tokens - self.kv_used - (self.last_kv if self.now > t else 0)

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        """Prompt tokens a prefix lookup would find on this instance now (0 without a prefix cache)."""
        return self.kvm.cached_prefix_tokens(prefix, input_len) if self.kvm is not None else 0

    def unfinished_at(self, t: float) -> list[int]:
        """Local ids of requests not finished by time t (lost if the instance fails at t)."""
        fin = self.fin
        return [r for r in range(len(fin)) if not fin[r] <= t]

    # --- running ----------------------------------------------------------------------------

    def advance(self, until: float = math.inf) -> None:
        """Run every step that starts before ``until`` (all of them by default)."""
        if self._fast is not None:
            return self._advance_compiled(until)
        setup = self.setup
        arr, inp, out, pre = self.arr, self.inp, self.out, self.pre
        first, fin = self.first, self.fin
        prefill, finishes = self.prefill, self.finishes
        now, step, visible, admitted = self.now, self.step, self.visible, self.admitted
        decoders, running, context, kv_used, done = self.decoders, self.running, self.context, self.kv_used, self.done
        last_done, last_kv = self.last_done, self.last_kv
        any_pre, on_finish = self.any_prefilled, self.on_finish
        known = len(arr)
        # features (all None / empty by default: the handbook's rule)
        kvm, spec, prefix = self.kvm, self.spec, self.prefix
        win, wout, requeued = self.win, self.wout, self.requeued
        fstep, run_order, swapped, spec_growth = self.fstep, self.run_order, self.swapped, self.spec_growth
        k1 = spec.k + 1 if spec is not None else 1          # tokens a decoder computes per step
        stats = self.stats

        budget_max, max_seqs, kv_cap = setup.max_num_batched_tokens, setup.max_num_seqs, setup.kv_capacity_tokens
        step_time = setup.step_time         # event steps; quiet runs go through quiet_run
        log_start, log_tokens, log_ctx0 = self.log_start, self.log_tokens, self.log_ctx0
        log_grow, log_dec, log_count, log_pairs = self.log_grow, self.log_dec, self.log_count, self.log_pairs

        while True:
            while visible < known and arr[visible] <= now:
                visible += 1
            if running == 0 and admitted == visible and not requeued:
                if visible < known and arr[visible] < until:
                    now = arr[visible]
                    continue
                break
            if now >= until:
                break

            if kvm is not None:                        # drop finish entries of preempted decoders
                while finishes and fstep.get(finishes[0][1]) != finishes[0][0]:
                    heapq.heappop(finishes)
            # A quiet run: only decoders run and no admission can happen before the next finish.
            if not prefill and decoders and spec is None and (
                    (admitted == visible and not requeued) or decoders >= budget_max or running >= max_seqs
                    or (kv_used + inp[admitted] + out[admitted] > kv_cap if kvm is None
                        else not self._head_fits(requeued[0] if requeued else admitted))):
                quiet = finishes[0][0] - step          # steps before the next finishing step
                if kvm is not None:
                    quiet = kvm.fit_steps(step, quiet)  # ... and before the blocks run out
                if quiet > 0:
                    limit = arr[visible] if admitted == visible and visible < known else math.inf
                    if until < limit:
                        limit = until                  # a driver may submit at `until`: stop there
                    t, c, k = quiet_run(setup, now, context, decoders, quiet, limit)
                    log_start.append(now); log_tokens.append(decoders); log_ctx0.append(context)
                    log_grow.append(decoders); log_dec.append(decoders); log_count.append(k); log_pairs.append(0)
                    if kvm is not None:
                        kvm.grow(step, k)
                    now, context, step = t, c, step + k
                    last_done = last_kv = 0
                    continue

            # An event step: the general rule, touching only the head of the prefill queue.
            extra, flags, preempted = 0.0, 0, False
            if kvm is not None:
                # Paged KV: the decoders' new blocks this step, preempting the most recent if short.
                need = kvm.need(step)
                while need > kvm.free_blocks():
                    preempted = True
                    r = next(reversed(run_order))      # the most recently admitted
                    del run_order[r]
                    if r not in fstep:                 # still in its prompt: the prefill queue's tail
                        left = prefill.pop()[1]
                        g, done_r = -1, win[r] - left
                        context -= done_r
                        computed = done_r
                    else:
                        g = out[r] - (fstep.pop(r) - step + 1)   # tokens generated so far
                        kvm.stop_decoding(r)
                        decoders -= 1
                        context -= inp[r] + g
                        computed = done_r = inp[r] + g - 1
                    kvm.release(r, computed, prefix[r])
                    running -= 1
                    stats["preemptions"][r] += 1
                    if kvm.swap_s_per_token:
                        extra += computed * kvm.swap_s_per_token
                        flags |= SWAP
                        swapped[r] = (computed, g, done_r)
                    elif g >= 1:                       # recompute: prefill prompt + generated again
                        win[r], wout[r] = inp[r] + g, out[r] - g
                        pre[r] = 0                     # (a PD arrival's prompt KV is gone too)
                    requeued.appendleft(r)
                    need = kvm.need(step)
                kvm.take_step_blocks(need)
            budget = budget_max - decoders * k1
            tokens = decoders * k1
            dtok = tokens                               # decoders' tokens (speculative: verified ones)
            pairs = 0
            completed = []
            for entry in prefill:
                give = min(entry[1], budget)
                if give <= 0:
                    break
                budget -= give
                tokens += give
                pairs += attention_pairs(win[entry[0]] - entry[1], give)
                entry[1] -= give
                if entry[1] == 0:
                    completed.append(entry[0])
            for _ in completed:
                prefill.popleft()
            while budget > 0 and running < max_seqs and (admitted < visible or requeued) and not preempted:
                r = requeued[0] if requeued else admitted
                cached = 0
                if kvm is None:
                    if kv_used + inp[r] + out[r] > kv_cap:
                        break
                    kv_used += inp[r] + out[r]
                elif r in swapped:
                    computed, g, done_r = swapped[r]
                    if not kvm.admit_blocks(r, computed + 1 if g >= 1 else win[r]):
                        break
                    del swapped[r]
                    extra += computed * kvm.swap_s_per_token
                    flags |= SWAP
                    if g >= 1:                         # a decoder again, its KV back
                        requeued.popleft()
                        run_order[r] = None
                        running += 1
                        budget -= 1
                        tokens += 1
                        dtok += 1
                        context += inp[r] + g
                        decoders += 1
                        _start_decoding(self, r, step + out[r] - g - 1, computed + 1, step + 1)
                        continue
                    cached = done_r
                elif any_pre and pre[r]:
                    if not kvm.admit_blocks(r, inp[r] + 1):   # its prompt's KV and its first token's
                        break
                else:
                    got = kvm.admit(r, win[r], prefix[r])
                    if got is None:
                        break
                    cached, host = got
                    stats["cached_tokens"][r] += cached
                    stats["prompt_tokens"][r] += win[r]
                    if host:
                        stats["host_tokens"][r] += host
                        extra += host // kvm.B * kvm.cache.readback_s
                        flags |= READBACK
                    if requeued:
                        flags |= RECOMPUTE
                running += 1
                if requeued:
                    requeued.popleft()
                else:
                    admitted += 1
                if kvm is not None:
                    run_order[r] = None
                if any_pre and pre[r]:
                    # Arrives with its prompt's KV: a decoder from this step on (its 2nd token).
                    budget -= k1
                    tokens += k1
                    dtok += k1
                    context += inp[r] + 1
                    decoders += 1
                    if kvm is not None:
                        _start_decoding(self, r, step + out[r] - 2, inp[r] + 1, step + 1)
                    elif spec is not None:
                        heapq.heappush(finishes, (_speculate(self, r, out[r] - 1, step), r))
                    else:
                        heapq.heappush(finishes, (step + out[r] - 2, r))
                    continue
                context += cached
                left = win[r] - cached
                give = min(left, budget)
                budget -= give
                tokens += give
                pairs += attention_pairs(cached, give)
                if give == left:
                    completed.append(r)
                else:
                    prefill.append([r, left - give])

            log_start.append(now); log_tokens.append(tokens); log_ctx0.append(context)
            log_grow.append(0); log_dec.append(decoders); log_count.append(1); log_pairs.append(pairs)
            if spec is not None and dtok:
                extra += spec.k * spec.draft_cost * step_time(dtok // k1, context)
            if extra or flags:
                self.log_extra[len(log_start) - 1] = extra
                self.log_flags[len(log_start) - 1] = flags
                now += step_time(tokens, context, pairs) + extra
            else:
                now += step_time(tokens, context, pairs)
            if spec is None:
                context += tokens
            else:
                context += tokens - dtok + spec_growth.pop(step, 0)

            freed = []
            while finishes and finishes[0][0] == step:
                r = heapq.heappop(finishes)[1]
                if kvm is not None:
                    if fstep.get(r) != step:           # a preempted decoder's old entry
                        continue
                    del fstep[r]
                    kvm.stop_decoding(r)
                freed.append(r)
                decoders -= 1
            for r in completed:
                if first[r] != first[r]:               # NaN: its first token (not a recomputed prefill's)
                    first[r] = now
                context += 1
                if wout[r] == 1:
                    freed.append(r)
                elif kvm is not None:
                    _start_decoding(self, r, step + wout[r] - 1, win[r], step + 1)
                    decoders += 1
                elif spec is not None:
                    heapq.heappush(finishes, (_speculate(self, r, out[r] - 1, step + 1), r))
                    decoders += 1
                else:
                    heapq.heappush(finishes, (step + out[r] - 1, r))
                    decoders += 1
            last_done, last_kv = len(freed), 0
            for r in freed:
                fin[r] = now
                context -= inp[r] + out[r]
                if kvm is None:
                    kv_used -= inp[r] + out[r]
                    last_kv += inp[r] + out[r]
                else:
                    kvm.release(r, inp[r] + out[r] - 1, prefix[r])
                    del run_order[r]
                running -= 1
                done += 1
            step += 1
            if on_finish is not None and freed:
                self.now = now                         # the callback may look at the instance
                for r in freed:
                    on_finish(r, now)
                known = len(arr)

        self.now, self.step, self.visible, self.admitted = now, step, visible, admitted
        self.decoders, self.running, self.context, self.kv_used, self.done = decoders, running, context, kv_used, done
        self.last_done, self.last_kv = last_done, last_kv

    def _advance_compiled(self, until: float) -> None:
        """``advance`` through the compiled ``_event_loop`` (the handbook's rule only). The loop
        returns to Python to flush its step log, to grow its buffers, and after each step with
        finishes when ``on_finish`` is set (the callbacks run here, as in ``advance``)."""
        fast, arr, on_finish, now = self._fast, self.arr, self.on_finish, self.now
        # The loop's first lines, when they end the call (a driver often asks for no step at all).
        known, visible = len(arr), self.visible
        while visible < known and arr[visible] <= now:
            visible += 1
        if self.running == 0 and self.admitted == visible:
            stop = not (visible < known and arr[visible] < until)   # idle, and no arrival before until
        else:
            stop = now >= until
        if stop:
            self.visible = visible
            return
        f, s = fast.f, fast.s
        f[F_NOW], f[F_UNTIL] = now, until
        s[:S_SCALARS] = (self.step, visible, self.admitted, self.decoders, self.running, self.context,
                         self.kv_used, self.done, self.last_done, self.last_kv, known,
                         self.any_prefilled, on_finish is not None)
        while True:
            if fast.synced < len(arr):
                fast.sync(self)
                s[S_KNOWN] = len(arr)
            status = fast.loop(f, s, fast.arr, fast.req, self.first, self.fin, fast.work, fast.log_start,
                               fast.log_i)
            if s[S_LOG_M]:
                fast.flush(self)
            if status == FINISHED:
                self.now = now = float(f[F_NOW])       # the callback may look at the instance
                for r in fast.work[W_FREED, :s[S_LAST_DONE]].tolist():
                    on_finish(r, now)
            elif status == GROW:
                fast.grow()
            elif status == DONE:
                break
        (self.step, self.visible, self.admitted, self.decoders, self.running, self.context, self.kv_used,
         self.done, self.last_done, self.last_kv) = s[:S_KNOWN].tolist()
        self.now = float(f[F_NOW])

    def _head_fits(self, r: int) -> bool:
        """Paged: whether the queue's head may be admitted now (no state changes)."""
        kvm = self.kvm
        if r in self.swapped:
            computed, g, _ = self.swapped[r]
            tokens = computed + 1 if g >= 1 else self.win[r]
            return kvm.free_blocks() - (-(-tokens // kvm.B)) >= kvm.watermark
        if self.pre[r]:
            return kvm.free_blocks() - (-(-(self.inp[r] + 1) // kvm.B)) >= kvm.watermark
        # A prefix lookup costs as much as the admission's own: an event step tries it instead
        # (an event step of decoders only is the quiet run's arithmetic), unless it just failed.
        return not kvm.refused(r, self.win[r])

    def result(self) -> SimResult:
        """Everything submitted so far, in submission order, with the step log."""
        runs = tuple(np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, a.typecode)
                     for a in (self.log_start, self.log_tokens, self.log_ctx0, self.log_grow, self.log_dec,
                               self.log_count, self.log_pairs))
        setup = self.setup
        first = np.array(self.first, dtype=float)     # copies: the instance may still grow
        fin = np.array(self.fin, dtype=float)
        extra, flags = dict(self.log_extra), dict(self.log_flags)
        counters = {k: np.array(v, dtype=np.int64) for k, v in self.stats.items()}
        arr, inp, out, fast = self.arr, self.inp, self.out, self._fast
        if fast is not None and fast.synced == len(arr):   # the compiled loop's copies: same values
            arr, inp, out = fast.arr[:len(arr)].copy(), fast.req[0, :len(arr)].copy(), fast.req[1, :len(arr)].copy()
        res = SimResult(arr, first, fin, inp, out,
                        step_runs=lambda: _expand_steps(setup, *runs, extra=extra, flags=flags),
                        counters=counters)
        if self.spec is not None:
            res.spec_k = self.spec.k
        return res




def _start_decoding(inst: Instance, r: int, finish_step: int, kv_tokens: int, from_step: int) -> None:
    """Paged: ``r`` decodes from ``from_step`` over ``kv_tokens`` and finishes at ``finish_step``."""
    inst.fstep[r] = finish_step
    inst.kvm.start_decoding(r, kv_tokens, from_step)
    heapq.heappush(inst.finishes, (finish_step, r))


def _speculate(inst: Instance, r: int, remaining: int, from_step: int) -> int:
    """Speculative: draw ``r``'s tokens per decode step from ``from_step``; returns its finish step."""
    emits = inst.spec.emissions(r, remaining)
    growth = inst.spec_growth
    for j, e in enumerate(emits):
        s = from_step + j
        growth[s] = growth.get(s, 0) + e
    inst.stats["spec_steps"][r] += len(emits)
    return from_step + len(emits) - 1


def quiet_run(setup: Setup, now: float, context: int, decoders: int, quiet: int, limit: float):
    """Advance a quiet run: up to ``quiet`` steps of ``decoders`` tokens each, step j over a context
    of ``context + decoders * j``, stopping after the first step that ends at or past ``limit``.
    Returns (time, context, steps). All of the quiet-run arithmetic lives here: the compiled loop
    (``sim._compiled``, numba) when it is available, else the plain loop for short runs and numpy
    for long ones. All three do the same float operations in the same order, so the times are
    bit-for-bit equal (tests/test_engine_vs_reference.py runs every path)."""
    compute = 2 * setup.params * decoders / (setup.peak_flops * setup.mfu)
    kv_bytes, kv_ratio, w_bytes = setup.kv_bytes_per_token, setup.kv_bandwidth_ratio, setup.weight_bytes
    serial, bw = setup.kv_serial, setup.bandwidth
    overhead, comm_d = setup.step_overhead, setup.comm_s_per_token * decoders
    if _compiled_loop is not None:
        return _compiled_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio,
                              w_bytes, 1 - serial, serial, bw, overhead)
    if quiet >= VECTOR_MIN_STEPS:
        return _quiet_run_vectorized(setup, now, context, decoders, quiet, limit)
    return _quiet_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio,
                       w_bytes, 1 - serial, serial, bw, overhead)


def _quiet_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio, w_bytes,
                keep, serial, bw, overhead):
    """``Setup.step_time(decoders, c)`` written out (same operations, same order), step by step: a
    call and a builtin max() per step would cost more than the step itself. ``sim._compiled``
    compiles this very function."""
    t, c, k = now, context, 0
    while k < quiet:
        kv = kv_bytes * c / kv_ratio
        memory = (w_bytes + kv * keep) / bw
        t += (memory if memory > compute else compute) + kv * serial / bw + overhead + comm_d
        c += decoders
        k += 1
        if limit <= t:
            break
    return t, c, k


def _quiet_run_vectorized(setup: Setup, now, context, decoders, quiet, limit):
    """The tight loop's result for a long quiet run, in numpy with the same float operations.

    Step j computes ``decoders`` tokens over ``context + decoders * j``; the run stops after step
    ``quiet - 1`` or after the first step that ends at or past ``limit``. The cumulative sum adds the
    durations one by one from ``now``, exactly as the loop does. Returns (time, context, steps).
    """
    steps = quiet
    if limit != math.inf:
        # Steps only lengthen within a run, so the first one's length bounds how many fit before limit.
        steps = max(1, min(quiet, int((limit - now) / setup.step_time(decoders, context)) + 2))
    ctx = context + decoders * np.arange(steps, dtype=np.int64)
    duration = setup.step_times(decoders, ctx)
    ends = np.cumsum(np.concatenate(([now], duration)))[1:]
    k = steps
    if limit != math.inf:
        k = min(steps, int(np.searchsorted(ends, limit, side="left")) + 1)
    return float(ends[k - 1]), context + decoders * k, k



# --- the compiled event loop ---------------------------------------------------------------
#
# ``_event_loop`` is ``Instance.advance``'s loop for the handbook's rule (no KV policy, no prefix
# cache, no speculation), transcribed line for line onto numpy arrays so that numba can compile it
# (sim/_compiled.py; it is never run uncompiled): the step rule is the module docstring's, and the
# Python loop in ``advance`` is its readable statement. The same float operations in the same order
# give the same times bit for bit; tests/test_engine_vs_reference.py and the other property tests
# run both. State lives in two arrays: f (float64) and s (int64), indexed by the names below.

F_NOW, F_UNTIL, F_TWO_P, F_FLOPS, F_ATTN, F_ATTN_FLOPS, F_KV_BYTES, F_KV_RATIO, F_KEEP, F_SERIAL, \
    F_W_BYTES, F_BW, F_OVERHEAD, F_COMM = range(14)
S_STEP, S_VISIBLE, S_ADMITTED, S_DECODERS, S_RUNNING, S_CONTEXT, S_KV_USED, S_DONE, S_LAST_DONE, \
    S_LAST_KV, S_KNOWN, S_ANY_PRE, S_ON_FINISH, S_PF_HEAD, S_PF_LEN, S_HEAP_N, S_LOG_M, S_BUDGET, \
    S_MAX_SEQS, S_KV_CAP = range(20)
S_SCALARS = S_ON_FINISH + 1          # the ones copied from and back to the Instance's attributes
DONE, LOG_FULL, FINISHED, GROW = range(4)   # why _event_loop returned
LOG_CAP = 4096                               # step-log entries buffered per call
W_STEP, W_R, W_PF_R, W_PF_LEFT, W_COMPLETED, W_FREED = range(6)   # the rows of _FastState.work


class _FastState:
    """The compiled loop's arrays: requests (arrival; input, output, prefilled), ``work`` (rows W_*:
    the finish heap of (step, request), the prefill queue as a ring of (request, prompt tokens
    left), the step's completed prompts and finishes) and the step log."""

    def __init__(self, setup: Setup, loop):
        self.loop = loop                 # the compiled _event_loop (kept: use_compiled may change)
        self.f = np.zeros(14)
        self.f[F_TWO_P:] = (2 * setup.params, setup.peak_flops * setup.mfu, setup.attn_flops_per_pair,
                            setup.peak_flops * setup.attn_mfu, setup.kv_bytes_per_token,
                            setup.kv_bandwidth_ratio, 1 - setup.kv_serial, setup.kv_serial,
                            setup.weight_bytes, setup.bandwidth, setup.step_overhead, setup.comm_s_per_token)
        self.s = np.zeros(20, dtype=np.int64)
        self.s[S_BUDGET:] = (setup.max_num_batched_tokens, setup.max_num_seqs, setup.kv_capacity_tokens)
        self.synced = 0
        self.arr = np.zeros(0)
        self.req = np.zeros((3, 0), dtype=np.int64)
        cap = min(setup.max_num_seqs, setup.max_num_batched_tokens, 64) + 1
        self.work = np.zeros((6, cap), dtype=np.int64)
        self.log_start = np.zeros(LOG_CAP)
        self.log_i = np.zeros((6, LOG_CAP), dtype=np.int64)

    def sync(self, inst: Instance) -> None:
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

    def flush(self, inst: Instance) -> None:
        """Append the buffered step log to the Instance's run-length log."""
        m = int(self.s[S_LOG_M])
        inst.log_start.frombytes(self.log_start[:m].tobytes())
        for row, log in enumerate((inst.log_tokens, inst.log_ctx0, inst.log_grow, inst.log_dec,
                                   inst.log_count, inst.log_pairs)):
            log.frombytes(self.log_i[row, :m].tobytes())
        self.s[S_LOG_M] = 0


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
                t, c, k = _quiet_loop(now, context, decoders, quiet, limit, two_p * decoders / flops,
                                      comm * decoders, kv_bytes, kv_ratio, w_bytes, keep, serial, bw, overhead)
                log_start[m] = now
                log_i[0, m], log_i[1, m], log_i[2, m] = decoders, context, decoders
                log_i[3, m], log_i[4, m], log_i[5, m] = decoders, k, 0
                m += 1
                now, context, step = t, c, step + k
                last_done = last_kv = 0
                continue

        # An event step: the general rule, touching only the head of the prefill queue.
        budget = budget_max - decoders
        tokens = decoders
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
        pf_head = (pf_head + completed) % cap
        pf_len -= completed
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

        log_start[m] = now
        log_i[0, m], log_i[1, m], log_i[2, m] = tokens, context, 0
        log_i[3, m], log_i[4, m], log_i[5, m] = decoders, 1, pairs
        m += 1
        # Setup.step_time(tokens, context, pairs), written out: same operations, same order
        compute = two_p * tokens / flops
        if attn:
            compute = compute + attn * pairs / attn_flops
        kv = kv_bytes * context / kv_ratio
        memory = (w_bytes + kv * keep) / bw
        now += (memory if memory > compute else compute) + kv * serial / bw + overhead + comm * tokens
        context += tokens

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
        last_done, last_kv = freed, 0
        for i in range(freed):
            r = freed_r[i]
            fin[r] = now
            context -= inp[r] + out[r]
            kv_used -= inp[r] + out[r]
            last_kv += inp[r] + out[r]
            running -= 1
            done += 1
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


def use_compiled(enabled: bool) -> bool:
    """Turn the compiled loops on (the default when numba is installed) or off (the plain Python
    path); returns whether they are on. Instances made afterwards use the choice. Tests run the
    engine both ways."""
    global _compiled_loop, _compiled_event, _compile_pending
    _compile_pending = False
    _compiled_loop = _compiled_event = None
    if enabled:
        from sim import _compiled
        _compiled_loop = _compiled.quiet_loop()
        _compiled_event = _compiled.event_loop()
    return _compiled_loop is not None


def compiled() -> bool:
    """Whether the quiet-run loop (and the handbook rule's event loop) run compiled."""
    _ensure_compiled()
    return _compiled_loop is not None


def _ensure_compiled() -> None:
    """Load (or compile) the loops on the engine's first use rather than at import: ``import sim``
    for a Setup, a preset or the CLI's help does not pay for numba."""
    if _compile_pending:
        use_compiled(True)


_compiled_loop = _compiled_event = None
_compile_pending = True


def _expand_steps(setup: Setup, start, tokens, ctx0, grow, dec, count, pairs, extra=None, flags=None) -> StepLog:
    """Rebuild one entry per step from the run-length log, with the engine's exact arithmetic.
    ``extra``/``flags``: seconds beyond the roofline and what the step contained, by log entry."""
    count = np.asarray(count, dtype=np.int64)
    total = int(count.sum())
    run_of_step = np.repeat(np.arange(len(count)), count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    tokens = np.asarray(tokens, dtype=np.int64)[run_of_step]
    context = np.asarray(ctx0, dtype=np.int64)[run_of_step] + np.asarray(grow, dtype=np.int64)[run_of_step] * offset
    pairs = np.asarray(pairs, dtype=np.int64)[run_of_step]
    duration = setup.step_times(tokens, context, pairs)
    extra_s = step_flags = None
    if extra:
        first_of_run = np.cumsum(count) - count     # extras are on event steps (runs of one step)
        at = first_of_run[np.fromiter(extra, dtype=np.int64)]
        extra_s = np.zeros(total)
        extra_s[at] = np.fromiter(extra.values(), dtype=float)
        duration[at] = duration[at] + extra_s[at]
        step_flags = np.zeros(total, dtype=np.int64)
        step_flags[at] = np.fromiter(flags.values(), dtype=np.int64)
    return StepLog(duration=duration, tokens=tokens, context=context, pairs=pairs,
                   decoders=np.asarray(dec, dtype=np.int64)[run_of_step],
                   start=lambda: _step_starts(start, count, duration), extra_s=extra_s, flags=step_flags)


def _step_starts(run_start, count, duration) -> np.ndarray:
    """Start of every step: a run starts at its logged time (idle gaps lie between runs), then adds
    its steps' durations one by one, in the engine's order, so the times are the engine's own."""
    first_of_run = np.cumsum(count) - count
    starts = np.asarray(run_start, dtype=float)[np.repeat(np.arange(len(count)), count)]
    for i in np.flatnonzero(count > 1).tolist():
        a, k = int(first_of_run[i]), int(count[i])
        starts[a + 1:a + k] = np.cumsum(np.concatenate(([run_start[i]], duration[a:a + k - 1])))[1:]
    return starts
