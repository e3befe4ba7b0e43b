"""The fast engine: the step rule of one serving instance, with aggregates instead of per-request loops.

The step rule. ``Instance.advance`` is this list, one function per item (``_quiet_run`` is 2-5 for
steps of decoders only); what KV a request needs is the KV manager's answer (``sim.kv.manager``:
the handbook's ``Reserve`` by default, ``Paged``), never the scheduler's:

1. Requests whose ``arrival <= now`` join a FIFO waiting queue (preempted requests go back to its
   head; retracted ones, ``RatioReserve``, to its tail; ``Paged(policy="priority")``: one queue
   ordered by (priority, arrival, id)). If nothing waits or runs, ``now`` jumps to the next arrival.
2. The KV manager allocates the decoders' KV for the step (``allocate_step``); where it falls short
   it preempts running requests (its ``victim``: paged, the most recently admitted; priority, the
   least urgent, and decoders after a victim that preempted itself decode nothing this step) until
   the rest fit, and a step that preempted admits no one (3); one that preempted everyone runs no
   model. (Paged with speculation: every chunk and decoder also holds k lookahead slots.)
   Budget = ``max_num_batched_tokens``. Running requests, in admission order: a decoding request
   takes 1 token (k + 1 when speculating; even past the budget, except with paged KV, where V1
   cuts the drafts: n - 1 of them, or none scheduled); one still in its prompt takes
   ``min(prompt tokens left, budget)`` once the KV manager has allocated that chunk
   (``allocate_chunk``, which may preempt likewise: if the victim is that request, the pass ends;
   priority: a victim scheduled earlier in the pass hands its tokens back to the budget);
   the first that would take 0 or fewer ends the pass.
3. While budget > 0 and fewer than ``max_num_seqs`` run, the queue's head is admitted if the KV
   manager says it fits (handbook: its whole reservation, ``input_len + output_len`` tokens; paged:
   its prompt's blocks less prefix hits, and the watermark). Its cached tokens count as computed;
   it takes ``min(prompt tokens left, budget)`` (its chunk allocated), or decodes at once if its
   KV arrived whole. (Paged with speculation: a 1-token prompt beside decoders only takes 1 + k,
   k placeholder drafts, as V1 pads it.)
4. The step lasts ``Setup.step_time(tokens, context, pairs, decoders)``, context being the KV held
   before the step, pairs the prompt chunks' (query, key) attention pairs (``setup.attention_pairs``)
   and decoders the requests decoding in it (their host time, ``Setup.host_s_per_seq``), plus
   the KV manager's seconds (swap, read-back) and the drafts' (speculative).
5. At the step's end: a completed prompt emits the first token (a recomputed one: its next token),
   each decoding request emits one token (speculative: 1 + accepted), and a request with all its
   tokens finishes and its KV is freed.

A request's progress is one counter, ``computed`` (tokens of its current prompt in the KV: prefix
hits, chunks, swapped-in KV move it; a recompute resets it), while it waits or prefills; a decoder's
progress is the step count itself, and ``fstep`` holds the step at whose end it finishes.

Why aggregates suffice: prompts complete in admission order (a later request gets prompt tokens only
in a step where every earlier prompt completes), so the running list is always the decoding requests
followed by the prefilling ones, and decoders are never cut off. A step therefore needs only the
number of decoders ``D``, the context sum, and the few prompts at the head of the prefill queue.
Between events (an arrival that can be admitted, a prompt chunk, a finish) every step computes ``D``
tokens over a context that grows by ``D``: such a quiet run is advanced in a tight loop that does the
same float operations in the same order as the plain loop, so the times are bit-for-bit equal.
With paged KV a quiet run also stops before the step whose new blocks would not fit (the manager
counts decoders per block phase, so every step's new blocks are known without touching a request);
a queue head that the prefix lookup may admit makes the step an event step; with speculative
decoding every step is an event step (each decoder's tokens per step are drawn). Event steps of
decoders only do the quiet run's arithmetic, so taking more of them never changes a time.

Compiled (numba, the ``fast`` extra; sim/_compiled.py): the handbook's rule specialised onto arrays
(``_compiled.event_loop``, checked bit for bit against this rule and the plain references by the
same tests), and the quiet-run loop for the other rules. Used only where it pays: see
``COMPILE_MIN_REQUESTS``.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from typing import Sequence

import numpy as np

from sim._compiled import FastState, _quiet_loop, _smooth_max, build as build_compiled
from sim.kv import RESUME, kv_manager
from sim.result import SimResult, expand_steps
from sim.setup import Setup, attention_pairs

VECTOR_MIN_STEPS = 128       # quiet runs at least this long are advanced with numpy (measured crossover)


def run_requests(setup: Setup, arrival: Sequence[float] | None, input_len: Sequence[int],
                 output_len: Sequence[int], *, concurrency: int | None = None,
                 think_s: float = 0.0, prefix=None, priorities=None) -> SimResult:
    """Simulate requests through one instance.

    Open loop: ``arrival`` holds each request's arrival time, nondecreasing. Closed loop
    (``concurrency`` given, ``arrival`` None): the first ``concurrency`` requests arrive at t = 0 and
    every finish sends the next request ``think_s`` later. Lengths are per request, and so are
    ``priorities`` (ints, smaller = more urgent; ``Paged(policy="priority")`` only). Inputs are
    assumed validated (see ``sim.simulate`` and ``sim.workload``).
    """
    inp = list(map(int, input_len))
    out = list(map(int, output_len))
    n = len(inp)
    prio = list(priorities) if priorities is not None else None
    if concurrency is None:
        instance = Instance(setup, expected_requests=n)
        instance.submit_many(list(map(float, arrival)), inp, out, prefix=list(prefix) if prefix else None,
                             priority=prio)
    else:
        first = min(concurrency, n)
        # closed loop: each finish issues the next request think_s later, from inside the step loop
        def issue_next(_request, now):
            k = len(instance.arr)
            if k < n:
                instance.submit(now + think_s, inp[k], out[k], priority=prio[k] if prio else 0)
        instance = Instance(setup, on_finish=issue_next, expected_requests=n)
        instance.submit_many([0.0] * first, inp[:first], out[:first], priority=prio[:first] if prio else None)
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
    done, so a router sees what a gateway sees at ``t``. ``quiet_until()`` says until when those
    answers cannot change with nothing more submitted, so a driver (the fleet) may skip advancing
    to read them before then.

    A request submitted with ``prefilled=True`` brings its prompt's KV (PD disaggregation's decode
    side): at admission it reserves input + output tokens as usual, takes 1 token of budget, is a
    decoder from that step on (its first decode step produces its second token), and adds its
    prompt plus first token (``input_len + 1``) to the context read by that step.

    ``on_finish(local_id, time)`` is called as each finish is committed; it may submit requests
    (arriving at or after ``time``), which the next step start sees.
    The KV seam: every question about KV space goes to ``self.kv``, the manager for ``Setup.kv``
    (``sim.kv.manager``); the scheduler never touches a block or a reservation. ``prefix`` (per
    request) names its content for the prefix cache; ``cached_prefix_tokens`` is what a
    prefix-aware router asks. ``expected_requests`` (how many this instance will see, if known)
    decides whether the compiled loops are worth loading (``COMPILE_MIN_REQUESTS``).
    """

    def __init__(self, setup: Setup, *, on_finish=None, expected_requests: int | None = None):
        self.setup = setup
        self.on_finish = on_finish
        self.arr: list[float] = []
        self.inp: list[int] = []
        self.out: list[int] = []
        self.pre: list[int] = []          # 1 where the request arrives prefilled
        self.prefix: list = []            # per request, prefix identity (sim/kv/prefix_cache.py) or None
        self.first = array("d")
        self.fin = array("d")
        self.now = 0.0
        self.step = 0                     # index of the next step
        self.visible = 0                  # requests [0, visible) have arrived by now
        self.admitted = 0                 # [0, admitted) were admitted (FIFO): waiting = [admitted, visible)
        self.requeued: deque[int] = deque()        # preempted, back at the queue's head
        self.behind: deque = deque()               # retracted (RatioReserve: SGLang), back at the tail:
                                                   # (arrivals then visible, request), in order
        # Paged(policy="priority"): every waiting request is in one queue ordered by (priority,
        # arrival, id), ``requeued`` (arrivals join it at step starts: ``admitted`` counts those
        # taken in); ``prio`` holds each request's priority, ``chunks`` this step's prompt chunks
        # (request -> (tokens, pairs)) and ``handed_back`` the scheduled requests preempted since.
        self.by_priority = getattr(setup.kv, "policy", "fcfs") == "priority"
        self.prio: list[int] = []
        self.chunks: dict | None = None
        self.handed_back: list = []
        if self.by_priority:
            self.requeued = PriorityQueue(self.prio, self.arr)
        self.run_order: dict[int, None] = {}       # running requests in admission order
        self.prefill: deque[int] = deque()         # running requests still in their prompt, in order
        self.finishes: list[tuple[int, int]] = []  # heap of (step at whose end it finishes, request)
        self.fstep: dict[int, int] = {}            # decoder -> step at whose end it finishes
        self.preempted = False                     # whether the step being built preempted
        self.decoders = 0                 # D: running requests past their prompt
        self.running = 0
        self.context = 0                  # sum over running of (prompt tokens computed + tokens generated)
        self.done = 0
        self.any_prefilled = False
        self.last_done = 0                # requests finished at the end of the last step run,
        self.last_kv = 0                  # and the KV tokens they held
        # A request's progress: ``computed`` tokens of this attempt's prompt ``target`` (input_len,
        # or input_len + generated after a recompute) are in the KV: prefix hits and swapped-in KV
        # set it at admission, prompt chunks move it, preemption resets it (sim/kv decides how).
        # Decoders' progress is the step count itself (aggregates): ``fstep`` is where they end.
        self.computed: list[int] = []
        self.kv = kv_manager(setup)
        self._requeue_tail = getattr(self.kv, "requeue_tail", False)
        self._chunk_room = getattr(self.kv, "chunk_room", None)   # a manager that cuts prompt chunks
        self.target = self.inp if not self.kv.preempts else []
        # Run-length step log: each entry is `count` steps from `start`, each computing `tokens`
        # tokens over a context that starts at `ctx0` and grows by `grow` per step, with `dec`
        # decoders. Event steps also log their prompt chunks' attention pairs (quiet runs have none).
        self.log_start = array("d")
        (self.log_tokens, self.log_ctx0, self.log_grow, self.log_dec, self.log_count,
         self.log_pairs) = (array("q") for _ in range(6))
        # Event steps may add seconds beyond the roofline (read-back, swap, drafts) and carry
        # flags; both are logged sparsely by log index.
        self.log_extra: dict[int, float] = {}
        self.log_flags: dict[int, int] = {}
        self.spec = setup.speculative
        self.spec_growth: dict[int, int] = {}      # speculative: step -> tokens its decoders emit
        # speculative with paged KV: decoder -> (first decode step, tokens per step), to undo on
        # preemption; and the placeholder drafts (V1's padding) scheduled in the step being built
        self.spec_emits: dict[int, tuple] | None = {} if self.spec is not None and self.kv.preempts else None
        self.placeholders = 0
        self.spec_cuts: dict[int, dict] = {}       # request -> {decode step number: drafts} where cut
        self.cuts: dict | None = None              # this step's cut decoders (request -> tokens)
        self.stats: dict[str, list] = {}           # per-request feature counters (see result())
        if setup.kv is not None:
            self.stats.update(preemptions=[], cached_tokens=[], host_tokens=[], prompt_tokens=[])
        if self.spec is not None:
            self.stats.update(spec_steps=[])
        # Compiled loops only where they pay (``_compiled_loops``): the handbook's rule then runs
        # in the compiled event loop, and quiet runs of the other rules in the compiled quiet loop.
        loops = _compiled_loops(expected_requests)
        # quiet_until's step-time terms (None where it answers ``now``: paged KV, speculative decoding)
        self._decode_terms = None
        if setup.kv is None and self.spec is None:
            self._decode_terms = (2 * setup.params, setup.peak_flops * setup.mfu, setup.kv_bytes_per_token,
                                  setup.kv_bandwidth_ratio, setup.weight_bytes, 1 - setup.kv_serial,
                                  setup.kv_serial, setup.bandwidth, setup.step_overhead, setup.comm_s_per_token,
                                  setup.roofline_p, setup.host_s_per_seq, setup.comm_curve)
        self._quiet_loop = loops[0] if loops else None
        self._fast = (FastState(setup, loops[1]) if loops and setup.kv is None and self.spec is None
                      else None)

    # --- taking requests ---------------------------------------------------------------------

    def submit(self, arrival: float, input_len: int, output_len: int, *, prefilled: bool = False,
               prefix=None, priority: int = 0) -> int:
        """Queue a request arriving at ``arrival``; returns its local id (submission order).
        ``prefix``: its prefix identity for a prefix cache (``sim.kv.prefix_cache``); ``priority``:
        an int, smaller = more urgent (vLLM's convention), with ``Paged(policy="priority")`` only."""
        if self.arr and arrival < self.arr[-1]:
            raise ValueError(f"arrival must be nondecreasing per instance: {arrival!r} after {self.arr[-1]!r}")
        if priority != 0 or self.by_priority:
            self._check_priorities([priority])
        if prefilled:
            if self.spec_emits is not None:
                raise ValueError("prefilled requests (PD) with speculative decoding and paged KV are not "
                                 "modelled (vLLM V1 takes them through a KV connector)")
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
        self.prefix.append(prefix)
        self._grow_features(1, [input_len])
        return len(self.arr) - 1

    def submit_many(self, arrival: list[float], input_len: list[int], output_len: list[int],
                    prefix=None, priority=None) -> None:
        """``submit`` for many requests at once (not prefilled; arrivals nondecreasing)."""
        n = len(arrival)
        if priority is not None or self.by_priority:
            priority = [0] * n if priority is None else list(priority)
            if len(priority) != n:
                raise ValueError(f"priority must give one int per request: {len(priority)} for {n} requests")
            self._check_priorities(priority)
        self.arr.extend(arrival)
        self.inp.extend(input_len)
        self.out.extend(output_len)
        self.pre.extend([0] * n)
        self.first.extend(array("d", [math.nan]) * n)
        self.fin.extend(array("d", [math.nan]) * n)
        self.prefix.extend(prefix if prefix is not None else [None] * n)
        self._grow_features(n, input_len)

    def _check_priorities(self, priority: list) -> None:
        """Priorities are ints and need ``Paged(policy="priority")`` (as vLLM refuses a priority
        without its priority scheduler); kept in ``prio``."""
        for p in priority:
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                raise ValueError(f"priority must be an int (smaller = more urgent), got {p!r}")
        if not self.by_priority:
            if any(priority):
                raise ValueError("a request priority needs Setup.kv=sim.kv.Paged(policy='priority'), "
                                 f"got Setup.kv={self.setup.kv!r} (FCFS)")
            return
        self.prio.extend(int(p) for p in priority)

    def _grow_features(self, n, input_len) -> None:
        self.computed.extend([0] * n)
        if self.target is not self.inp:
            self.target.extend(input_len)
        for values in self.stats.values():
            values.extend([0] * n)

    # --- state, as a gateway sees it at time t ------------------------------------------------

    def next_time(self) -> float:
        """When the next step starts: now if work is waiting or running, the next submitted
        arrival if idle, inf if nothing is left."""
        if self.running or self.admitted < self.visible or self.requeued or self.behind:
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
        return len(self.arr) - self.admitted + len(self.requeued) + len(self.behind)

    def free_kv_tokens(self, t: float) -> int:
        """Free KV tokens at time t (paged: free blocks now, cached ones counting as free)."""
        return self.kv.free_tokens(self.last_kv if self.now > t else 0)

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        """Prompt tokens a prefix lookup would find on this instance now (0 without a prefix cache)."""
        return self.kv.cached_prefix_tokens(prefix, input_len)

    def unfinished_at(self, t: float) -> list[int]:
        """Local ids of requests not finished by time t (lost if the instance fails at t)."""
        fin = self.fin
        return [r for r in range(len(fin)) if not fin[r] <= t]

    def quiet_until(self) -> float:
        """A time T such that, with nothing more submitted, the accessors above (``outstanding``,
        ``running_at``, ``queue_len``, ``free_kv_tokens``, ``cached_prefix_tokens``,
        ``unfinished_at``) asked at any t < T answer the same whether or not ``advance(t)`` runs
        first; ``now`` where no such time is known (a driver may then skip no advance).

        The rule (the handbook's reservation, no speculation; paged KV and speculative decoding
        answer ``now``): when every running request decodes (none in its prompt) and no admission
        can happen before the next finish (nothing submitted waits, or the queue's head is blocked
        by the budget, the seats or its reservation, all of which hold until a finish), every step
        up to the next finish computes the same D tokens over a context of at least C, so lasts at
        least ``step_time(D, C)`` (the roofline is nondecreasing in context). The next finish is at
        the end of step ``root`` (the finish heap's head), q + 1 = root - step + 1 steps from now,
        and nothing changes before that end: T = now + q * step_time(D, C) leaves one whole step
        for the rounding of the float sums (checked below, so the bound holds for any magnitude).
        """
        now, decoders, terms = self.now, self.decoders, self._decode_terms
        if terms is None or decoders == 0 or decoders != self.running:
            return now                                 # not the reservation rule, idle, or a prompt runs
        head = self.admitted
        if head < len(self.arr):                       # a request waits (or will arrive): blocked?
            setup = self.setup
            if (decoders < setup.max_num_batched_tokens and self.running < setup.max_num_seqs
                    and self.kv.head_fits(self, head)):
                return now
        fast = self._fast
        root = fast.next_finish_step() if fast is not None else self.finishes[0][0]
        q = root - self.step
        if q <= 0:
            return now
        # d = setup.step_time(decoders, context), written out with the same operations in the same
        # order (as _quiet_loop does; bit for bit): the call would cost most of this method.
        two_p, flops, kv_bytes, kv_ratio, w_bytes, keep, serial, bw, overhead, comm, p, host, curve = terms
        compute = two_p * decoders / flops
        kv = kv_bytes * self.context / kv_ratio
        memory = (w_bytes + kv * keep) / bw
        bound = (memory if memory > compute else compute) if p == 0 else _smooth_max(compute, memory, p)
        per_step = comm * decoders + host * decoders if host else comm * decoders
        if curve is not None:
            per_step = per_step + self.setup.comm_seconds(decoders)
        d = bound + kv * serial / bw + overhead + per_step
        # The real change is at the end of q + 1 steps of at least d each, summed in floats from now:
        # >= (now + (q + 1) d)(1 - (q + 1) u), u = 2**-53, while T rounds up by at most (1 + 3u), so
        # T <= that end unless d <= (q + 4) u (now + (q + 1) d) (never at realistic magnitudes).
        if d <= (q + 4) * 2.3e-16 * (now + (q + 1) * d):
            return now
        return now + q * d

    # --- running: the numbered rule of the module docstring -----------------------------------

    def advance(self, until: float = math.inf) -> None:
        """Run every step that starts before ``until`` (all of them by default)."""
        if self._fast is not None:
            return self._fast.advance(self, until)
        arr, finishes, fstep, on_finish = self.arr, self.finishes, self.fstep, self.on_finish
        by_priority = self.by_priority
        while True:
            # 1. arrivals join the queue; an idle instance jumps to the next arrival
            known, visible, now = len(arr), self.visible, self.now
            while visible < known and arr[visible] <= now:
                visible += 1
            self.visible = visible
            if by_priority and self.admitted < visible:
                for r in range(self.admitted, visible):   # arrivals join the priority queue
                    self.requeued.appendleft(r)
                self.admitted = visible
            if self.running == 0 and self.admitted == visible and not self.requeued and not self.behind:
                if visible < known and arr[visible] < until:
                    self.now = arr[visible]
                    continue
                break
            if now >= until:
                break
            while finishes and fstep.get(finishes[0][1]) != finishes[0][0]:
                heapq.heappop(finishes)               # a preempted decoder's old entry
            if self._quiet_run(until):
                continue
            freed = self._event_step()
            if on_finish is not None and freed:
                for r in freed:                       # the callback may look at the instance
                    on_finish(r, self.now)

    def _quiet_run(self, until: float) -> bool:
        """Steps of decoders only, up to the next finish, arrival that could be admitted, ``until``
        or (paged) the step whose blocks would not fit, in one tight loop; False if none."""
        decoders = self.decoders
        if self.prefill or not decoders or self.spec is not None:
            return False
        r = self._head()
        if not (r is None or decoders >= self.setup.max_num_batched_tokens
                or self.running >= self.setup.max_num_seqs or not self.kv.head_fits(self, r)):
            return False
        step = self.step
        quiet = self.kv.quiet_steps(step, self.finishes[0][0] - step)   # before the next finish
        if quiet <= 0:
            return False
        arr, visible, now, context = self.arr, self.visible, self.now, self.context
        limit = arr[visible] if self.admitted == visible and visible < len(arr) else math.inf
        if until < limit:
            limit = until                             # a driver may submit at `until`: stop there
        t, c, k = quiet_run(self.setup, now, context, decoders, quiet, limit, self._quiet_loop)
        self._log(now, decoders, context, decoders, decoders, k, 0)
        self.kv.grow(step, k)
        self.now, self.context, self.step = t, c, step + k
        self.last_done = self.last_kv = 0
        return True

    def _head(self):
        """The queue's head: a preempted request first, else the oldest arrival; None if empty."""
        if self.requeued:
            return self.requeued[0]
        behind = self.behind
        if behind and behind[0][0] <= self.admitted:   # every request waiting before it was admitted
            return behind[0][1]
        return self.admitted if self.admitted < self.visible else None

    def _event_step(self) -> list[int]:
        """One step by the general rule (2-5); returns the requests it finished."""
        kv, spec, step = self.kv, self.spec, self.step
        self.preempted = False
        stalled = kv.allocate_step(self, step) if kv.preempts else None   # paged: the decoders' blocks
        k1 = spec.k + 1 if spec is not None else 1     # tokens a decoder computes per step
        cuts = self.cuts = kv.cuts if self.spec_emits is not None else None  # drafts the budget cut
        short = sum(k1 - n for n in cuts.values()) if cuts else 0
        if stalled is None:
            idle = 0
            budget = self.setup.max_num_batched_tokens - self.decoders * k1 + short
            tokens, completed = self.decoders * k1 - short, []
            budget, tokens, pairs = self._prefill_chunks(budget, tokens, completed)
            if cuts:                                   # (a cut decoder may have been preempted since)
                short = sum(k1 - n for r, n in cuts.items() if r in self.fstep)
            dtok = self.decoders * k1 - short          # decoders' tokens (speculative: verified ones)
        else:   # the pass ended at a decoder that preempted itself, or the budget ran out (no prompt runs)
            idle = len(stalled)                        # the decoders it did not reach
            dtok = tokens = (self.decoders - idle) * k1 - short
            budget, completed, pairs = self.setup.max_num_batched_tokens - tokens, [], 0
        if not self.preempted:
            budget, tokens, pairs, dtok = self._admit(budget, tokens, pairs, dtok, completed, k1)
            if tokens == 0:                            # nothing runs and the head never fits
                r = self._head()
                raise RuntimeError(f"request {r} ({self.target[r]} prompt tokens, {self.out[r]} output) can "
                                   f"never be admitted: it does not fit the free KV of an idle instance "
                                   f"({self.kv.free_tokens(0)} tokens)")
        elif tokens == 0 and not kv.extra:
            return []                                  # everyone was preempted: no model step, no time
        if idle:
            self._stall(stalled)
        if cuts:
            for r, n in cuts.items():
                if r in self.fstep:
                    self._recut(r, n)
        now, context, decoding = self.now, self.context, self.decoders - idle
        self._log(now, tokens, context, 0, decoding, 1, pairs)
        extra, flags = kv.extra, kv.flags
        if spec is not None and dtok:
            extra += spec.k * spec.draft_cost * self.setup.step_time(decoding, context)
        if extra or flags:
            kv.extra, kv.flags = 0.0, 0
            self.log_extra[len(self.log_start) - 1] = extra
            self.log_flags[len(self.log_start) - 1] = flags
            self.now = now + (self.setup.step_time(tokens, context, pairs, decoding) + extra)
        else:
            self.now = now + self.setup.step_time(tokens, context, pairs, decoding)
        if spec is None:
            self.context = context + tokens
        else:
            self.context = context + tokens - dtok - self.placeholders + self.spec_growth.pop(step, 0)
            self.placeholders = 0
        return self._end_step(completed)

    def _prefill_chunks(self, budget: int, tokens: int, completed: list):
        """Rule 2's prompts: running requests still in their prompt, in admission order, take
        chunks while the budget lasts (the first that gets none ends the pass). Paged: each chunk's
        blocks are allocated as it is scheduled; one that does not fit preempts (rule 2's victim),
        and the pass ends if the victim is the request itself."""
        prefill, target, computed, kv = self.prefill, self.target, self.computed, self.kv
        room = self._chunk_room
        chunks = self.chunks = {} if self.by_priority else None   # priority: victims hand tokens back
        handed_back = self.handed_back
        pairs = 0
        i = 0
        while i < len(prefill):
            r = prefill[i]
            done = computed[r]
            give = target[r] - done
            if give > budget:
                give = budget
            if room is not None:
                give = room(self, r, give)
            if give <= 0:
                break
            fits = not kv.preempts or kv.allocate_chunk(self, r, done + give)
            if handed_back:                           # requests scheduled earlier were preempted
                budget, tokens, pairs, i = self._hand_back(budget, tokens, pairs, i, completed)
            if not fits:
                break
            budget -= give
            tokens += give
            p = attention_pairs(done, give)
            pairs += p
            computed[r] = done + give
            if chunks is not None:
                chunks[r] = (give, p)
            if done + give == target[r]:
                completed.append(r)
            i += 1
        self.chunks = None
        for _ in completed:
            prefill.popleft()
        return budget, tokens, pairs

    def _hand_back(self, budget, tokens, pairs, i, completed):
        """Priority: requests scheduled earlier in this pass were preempted; their tokens go back
        to the budget (vLLM's running pass does the same) and the pass index moves with the queue."""
        for r, give, p, was_prefill in self.handed_back:
            budget += give
            tokens -= give
            pairs -= p
            if was_prefill:
                i -= 1
                if r in completed:
                    completed.remove(r)
        self.handed_back.clear()
        return budget, tokens, pairs, i

    def _admit(self, budget, tokens, pairs, dtok, completed, k1):
        """Rule 3: while budget and seats last, the queue's head is admitted if the KV manager
        says it fits (with its cached tokens); it takes its first chunk, or decodes at once."""
        kv, inp, out, target, computed = self.kv, self.inp, self.out, self.target, self.computed
        max_seqs, requeued = self.setup.max_num_seqs, self.requeued
        paged_spec, pad = self.spec_emits is not None, False
        only_decoders = paged_spec and 0 < tokens == dtok     # V1 pads a 1-token prompt beside them
        while budget > 0 and self.running < max_seqs:
            r = self._head()
            if r is None:
                break
            if paged_spec:
                # V1 admits only if this chunk plus k lookahead slots fit too (no prefix cache
                # with speculation here, so no hits); a 1-token prompt beside decoders only is
                # scheduled 1 + k tokens, k of them placeholder drafts (pad_spec_decode)
                pad = target[r] == 1 and only_decoders
                want = k1 if pad else min(target[r], budget)
                if want > budget or not kv.lookahead_fits(self, r, want):
                    break
            cached = kv.admit(self, r)
            if cached is None:
                break
            self.running += 1
            if requeued:
                requeued.popleft()
            elif self.behind and self.behind[0][1] == r:
                self.behind.popleft()
            else:
                self.admitted += 1
            self.run_order[r] = None
            if cached == RESUME or self.pre[r]:
                # Decodes from this step on: its KV came back whole (swap), or it arrives with
                # its prompt's KV (PD disaggregation's decode side: its second token next).
                g = computed[r] + 1 - inp[r] if cached == RESUME else 1
                take = 1 if cached == RESUME else k1
                budget -= take
                tokens += take
                dtok += take
                self.context += inp[r] + g
                self.decoders += 1
                if cached == RESUME or self.spec is None:
                    finish = self.step + out[r] - g - 1
                else:
                    finish = self._speculate(r, out[r] - 1, self.step, inp[r] + g)
                self._start_decoding(r, finish, inp[r] + g, self.step + 1)
                continue
            self.context += cached
            left = target[r] - cached
            give = min(left, budget)
            if pad:                                    # its placeholder drafts: slots, budget, time
                kv.allocate_chunk(self, r, cached + k1)
                self.placeholders += k1 - give
                budget -= k1 - give
                tokens += k1 - give
            else:
                kv.allocate_chunk(self, r, cached + give)   # fits: admission checked the whole prompt
            budget -= give
            tokens += give
            pairs += attention_pairs(cached, give)
            computed[r] = cached + give
            if give == left:
                completed.append(r)
            else:
                self.prefill.append(r)
        return budget, tokens, pairs, dtok

    def _end_step(self, completed: list) -> list[int]:
        """Rule 5: the step's finishing decoders and completed prompts; returns the finished."""
        finishes, fstep, step, kv = self.finishes, self.fstep, self.step, self.kv
        first, inp, out, target = self.first, self.inp, self.out, self.target
        freed, spec_emits = [], self.spec_emits
        while finishes and finishes[0][0] == step:
            r = heapq.heappop(finishes)[1]
            if fstep.get(r) != step:               # a preempted decoder's old entry
                continue
            del fstep[r]
            kv.stop_decoding(r)
            if spec_emits is not None:
                del spec_emits[r]
            freed.append(r)
            self.decoders -= 1
        now = self.now
        for r in completed:
            if first[r] != first[r]:               # NaN: its first token (not a recomputed prefill's)
                first[r] = now
            self.context += 1
            left = out[r] - (target[r] - inp[r])     # outputs of this attempt
            if left == 1:
                freed.append(r)
                continue
            finish = step + left - 1 if self.spec is None else self._speculate(r, left - 1, step + 1, target[r])
            self._start_decoding(r, finish, target[r], step + 1)
            self.decoders += 1
        self.last_done, self.last_kv = len(freed), 0
        fin, run_order = self.fin, self.run_order
        for r in freed:
            fin[r] = now
            self.context -= inp[r] + out[r]
            self.last_kv += inp[r] + out[r]
            del run_order[r]
        # KV is released in running order (paged: it orders the freed blocks in the LRU)
        for r in (kv.release_order(freed) if len(freed) > 1 and kv.preempts else freed):
            kv.free(self, r)
        self.running -= len(freed)
        self.done += len(freed)
        self.step = step + 1
        return freed

    def preempt(self, r: int) -> tuple[int, int]:
        """The scheduler's half of a preemption (the KV manager chose ``r`` and frees its KV):
        ``r`` leaves the running set for the queue's head (a manager with ``requeue_tail``, SGLang's
        retraction: for its tail, behind the requests waiting now). Returns (tokens of KV it had
        computed, tokens it had generated, -1 if still in its prompt)."""
        self.preempted = True
        del self.run_order[r]
        chunks = self.chunks                        # priority, prompt chunks being scheduled
        if r in self.fstep:                         # a decoder
            f = self.fstep.pop(r)
            generated = self.out[r] - (f - self.step + 1) if self.spec_emits is None else self._unspeculate(r)
            self.kv.stop_decoding(r)
            self.decoders -= 1
            self.context -= self.inp[r] + generated
            computed = self.inp[r] + generated - 1
            if chunks is not None:                  # it was scheduled and holds its token's slot
                k1 = self.spec.k + 1 if self.spec is not None else 1
                if self.cuts:
                    k1 = self.cuts.get(r, k1)
                self.handed_back.append((r, k1, 0, False))
                computed += 1
        else:                                       # still in its prompt (FCFS: the prefill queue's tail)
            if self.by_priority:
                self.prefill.remove(r)
            else:
                self.prefill.pop()
            generated, computed = -1, self.computed[r]
            chunk = chunks.pop(r, None) if chunks is not None else None
            if chunk is not None:                   # its chunk this step goes back to the budget
                self.handed_back.append((r, *chunk, True))
                self.context -= computed - chunk[0]
            else:
                self.context -= computed
        self.running -= 1
        self.stats["preemptions"][r] += 1
        if self._requeue_tail:                      # behind the requests waiting now
            self.behind.append((self.visible, r))
        else:
            self.requeued.appendleft(r)
        return computed, generated

    def _stall(self, decoders) -> None:
        """Priority: the running pass ended before these decoders (one before them preempted
        itself): they compute nothing this step, so each finishes a step later."""
        for r in decoders:
            f = self.fstep[r] + 1
            self.fstep[r] = f
            heapq.heappush(self.finishes, (f, r))
            self.kv.stall(r)
            if self.spec_emits is not None:        # speculating: its draws move on by one step
                from_step, emits = self.spec_emits[r]
                growth, ran = self.spec_growth, self.step - from_step
                for j in range(ran, len(emits)):
                    growth[from_step + j] -= emits[j]
                for j in range(ran, len(emits)):
                    growth[from_step + j + 1] = growth.get(from_step + j + 1, 0) + emits[j]
                self.spec_emits[r] = (from_step + 1, emits)

    def _start_decoding(self, r: int, finish_step: int, kv_tokens: int, from_step: int) -> None:
        """``r`` decodes from ``from_step`` over ``kv_tokens`` and finishes at ``finish_step``."""
        self.fstep[r] = finish_step
        self.kv.start_decoding(r, kv_tokens, from_step)
        heapq.heappush(self.finishes, (finish_step, r))

    def _speculate(self, r: int, remaining: int, from_step: int, kv_tokens: int) -> int:
        """Speculative: draw ``r``'s tokens per decode step from ``from_step`` (its KV holding
        ``kv_tokens``), continuing its draws after a preemption; returns its finish step. Paged:
        the KV manager plans each step's lookahead blocks from the same draws."""
        steps = self.stats["spec_steps"]
        emits = self.spec.emissions(r, remaining, steps[r], self.spec_cuts.get(r))
        growth = self.spec_growth
        for j, e in enumerate(emits):
            s = from_step + j
            growth[s] = growth.get(s, 0) + e
        steps[r] += len(emits)
        if self.spec_emits is not None:
            self.spec_emits[r] = (from_step, emits)
            self.kv.plan_speculation(r, kv_tokens, from_step, emits)
        return from_step + len(emits) - 1

    def _recut(self, r: int, n: int) -> None:
        """Speculative, paged: the budget gave decoder ``r`` only ``n`` tokens this step (n - 1
        drafts, vLLM V1's cut): this step's draw and the later ones are drawn again."""
        from_step, emits = self.spec_emits[r]
        j = self.step - from_step
        growth, steps = self.spec_growth, self.stats["spec_steps"]
        for jj in range(j, len(emits)):
            growth[from_step + jj] -= emits[jj]
        steps[r] -= len(emits) - j
        cut = self.spec_cuts.setdefault(r, {})
        cut[steps[r]] = n - 1
        remaining = self.out[r] - (self.target[r] - self.inp[r] + 1 + sum(emits[:j]))
        new = self.spec.emissions(r, remaining, steps[r], cut)
        for jj, e in enumerate(new):
            growth[self.step + jj] = growth.get(self.step + jj, 0) + e
        steps[r] += len(new)
        self.spec_emits[r] = (from_step, emits[:j] + new)
        f = self.step + len(new) - 1
        if f != self.fstep[r]:
            self.fstep[r] = f
            heapq.heappush(self.finishes, (f, r))
        self.kv.replan_speculation(r, self.step, n, new)

    def _unspeculate(self, r: int) -> int:
        """Speculative, paged: ``r`` is preempted before the current step; its later steps' draws
        are dropped. Returns the tokens it has generated."""
        from_step, emits = self.spec_emits.pop(r)
        ran = self.step - from_step
        growth = self.spec_growth
        for j in range(ran, len(emits)):
            growth[from_step + j] -= emits[j]
        self.stats["spec_steps"][r] -= len(emits) - ran
        return self.target[r] - self.inp[r] + 1 + sum(emits[:ran])

    def _log(self, start, tokens, ctx0, grow, dec, count, pairs) -> None:
        self.log_start.append(start); self.log_tokens.append(tokens); self.log_ctx0.append(ctx0)
        self.log_grow.append(grow); self.log_dec.append(dec); self.log_count.append(count)
        self.log_pairs.append(pairs)

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
                        step_runs=lambda: expand_steps(setup, *runs, extra=extra, flags=flags),
                        counters=counters)
        if self.spec is not None:
            res.spec_k = self.spec.k
        return res


class PriorityQueue:
    """The waiting queue of ``Paged(policy="priority")``: request ids by (priority, arrival, id),
    smallest first (vLLM's priority request queue), with the two calls the FCFS deque's head side
    is used through (``[0]``, ``popleft``; ``appendleft`` pushes, preempted or arriving)."""

    def __init__(self, prio: list, arr: list):
        self.heap: list = []
        self.prio, self.arr = prio, arr

    def __len__(self) -> int:
        return len(self.heap)

    def __getitem__(self, i: int) -> int:
        if i != 0:
            raise IndexError("only the queue's head is indexed")
        return self.heap[0][2]

    def popleft(self) -> int:
        return heapq.heappop(self.heap)[2]

    def appendleft(self, r: int) -> None:
        heapq.heappush(self.heap, (self.prio[r], self.arr[r], r))

    def ids(self) -> list[int]:
        """Waiting requests, head first."""
        return [e[2] for e in sorted(self.heap)]


def quiet_run(setup: Setup, now: float, context: int, decoders: int, quiet: int, limit: float,
              compiled_loop=None):
    """Advance a quiet run: up to ``quiet`` steps of ``decoders`` tokens each, step j over a context
    of ``context + decoders * j``, stopping after the first step that ends at or past ``limit``.
    Returns (time, context, steps). All of the quiet-run arithmetic lives here: ``compiled_loop``
    (``sim._compiled``, numba) when the instance has it, else the plain loop for short runs and numpy
    for long ones. All three do the same float operations in the same order, so the times are
    bit-for-bit equal (tests/test_engine_vs_reference.py runs every path)."""
    compute = 2 * setup.params * decoders / (setup.peak_flops * setup.mfu)
    kv_bytes, kv_ratio, w_bytes = setup.kv_bytes_per_token, setup.kv_bandwidth_ratio, setup.weight_bytes
    serial, bw = setup.kv_serial, setup.bandwidth
    overhead, comm_d = setup.step_overhead, setup._per_step(decoders, decoders)
    if compiled_loop is not None:
        return compiled_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio,
                              w_bytes, 1 - serial, serial, bw, overhead, setup.roofline_p)
    if quiet >= VECTOR_MIN_STEPS:
        return _quiet_run_vectorized(setup, now, context, decoders, quiet, limit)
    return _quiet_loop(now, context, decoders, quiet, limit, compute, comm_d, kv_bytes, kv_ratio,
                       w_bytes, 1 - serial, serial, bw, overhead, setup.roofline_p)


def _quiet_run_vectorized(setup: Setup, now, context, decoders, quiet, limit):
    """The tight loop's result for a long quiet run, in numpy with the same float operations.

    Step j computes ``decoders`` tokens over ``context + decoders * j``; the run stops after step
    ``quiet - 1`` or after the first step that ends at or past ``limit``. The cumulative sum adds the
    durations one by one from ``now``, exactly as the loop does. Returns (time, context, steps).
    """
    steps = quiet
    if limit != math.inf:
        # Steps only lengthen within a run, so the first one's length bounds how many fit before limit.
        steps = max(1, min(quiet, int((limit - now) / setup.step_time(decoders, context, 0, decoders)) + 2))
    ctx = context + decoders * np.arange(steps, dtype=np.int64)
    duration = setup.step_times(decoders, ctx, 0, decoders)
    ends = np.cumsum(np.concatenate(([now], duration)))[1:]
    k = steps
    if limit != math.inf:
        k = min(steps, int(np.searchsorted(ends, limit, side="left")) + 1)
    return float(ends[k - 1]), context + decoders * k, k


# --- whether to compile ----------------------------------------------------------------------
#
# Loading the compiled loops costs a fixed start-up once per process (importing numba and loading
# its cached machine code), and then saves a little per request simulated. Measured here
# (benchmarks/bench_sim.py's "start-up" part prints these figures) on the chapter's instance at
# 16.7 req/s, 2000/500-token requests, numba's cache warm: loading took 1.4-1.6 s; the Python path
# ran 14-17 us per request, the compiled one 0.5-1.1 us. Loading therefore pays from about
# 1.5 s / 14 us ~ 100,000 requests. "auto" counts the requests of the runs it kept on the Python
# path in this process and loads once they and the new run reach that (a ski-rental rule: never
# more than about twice the better choice's time). The seed chapter's script (13 runs, 18,300
# requests) stays on the Python path; a million-request run compiles. An ``Instance`` whose size is
# not known (driven from outside, e.g. by a fleet) loads them, as does any run once they are loaded.
COMPILE_MIN_REQUESTS = 100_000

_mode = "auto"                 # "auto" (by expected size), True (always) or False (never)
_loops = None                  # (quiet_loop, event_loop) once loaded
_loaded = False
_python_requests = 0           # requests of runs "auto" kept on the Python path so far


def use_compiled(enabled) -> bool:
    """Use the compiled loops always (True), never (False: the plain Python path) or where they pay
    ("auto", the default: ``COMPILE_MIN_REQUESTS``). Returns whether they are available (loading
    them now for True). Instances made afterwards use the choice; tests run the engine both ways."""
    global _mode
    if enabled not in (True, False, "auto"):
        raise ValueError(f"use_compiled takes True, False or 'auto', got {enabled!r}")
    _mode = enabled
    return enabled is not False and _load() is not None


def compiled() -> bool:
    """Whether the compiled loops are available (loading them now unless turned off)."""
    return _mode is not False and _load() is not None


def _load():
    global _loops, _loaded
    if not _loaded:
        _loaded = True
        _loops = build_compiled()
    return _loops


def _compiled_loops(expected_requests: int | None):
    """The compiled (quiet_loop, event_loop) for an instance expected to see ``expected_requests``
    (None: unknown), or None where the Python path is used."""
    global _python_requests
    if _mode is False:
        return None
    if (_mode is True or _loaded or expected_requests is None
            or _python_requests + expected_requests >= COMPILE_MIN_REQUESTS):
        return _load()
    _python_requests += expected_requests
    return None
