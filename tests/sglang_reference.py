"""SGLang's admission and retraction rule as a plain per-request stepper, in the simulator's step.

The yardstick for ``Setup(kv=RatioReserve(...))`` (sim/kv/ratio.py): one object per request, every
running request touched at every step, KV counted per request; written to be obviously right, not
fast. The rule is restated (no code copied) from sgl-project/sglang:

- ``python/sglang/srt/managers/schedule_policy.py`` at ad0119fdde519598c25f5c48b95dacaa2b85d607:
  ``PrefillAdder.__init__`` and ``_get_running_request_total_token_offset`` (each running request
  counts ``min(max_new_tokens - len(output_ids), CLIP_MAX_NEW_TOKENS) x new_token_ratio``),
  ``rem_total_tokens`` (free KV less those offsets and this pass's reservations),
  ``add_chunked_req`` (the chunked request's chunk cut to ``int(rem_total_tokens)``, its
  ``max_new_tokens`` reserved when its last chunk runs), ``add_one_req`` (refused when
  ``extend_input_len + min(max(max_new_tokens - len(output_ids), 0), CLIP) >= rem_total_tokens``;
  admitted whole: ``extend + min(max_new_tokens, CLIP)`` reserved; chunked: only the chunk);
- ``python/sglang/srt/managers/scheduler.py`` at 000eaffacf048e51b64d4d72985ef8f0b7054b39:
  ``Scheduler.__init__`` (ratio = init, floor = init x 0.14, decay = (init - floor) / 600 with
  init = min(0.7 x schedule_conservativeness, 1)), ``get_new_batch_prefill`` (no admission while
  ``batch_is_full``, set by a refusal, unless a chunked request is running), ``update_running_batch``
  (decay when decode memory suffices; else retract and take the ratio ``retract_decode`` returns;
  ``batch_is_full`` cleared when the batch shrank), ``_extend_requests_to_queue`` (retracted
  requests appended to the waiting queue);
- ``python/sglang/srt/managers/schedule_batch.py`` at the same commit: ``check_decode_mem`` (one
  token per decoder with page size 1), ``retract_decode`` (sort by (len(output_ids),
  -len(origin_input_ids)) descending, pop from the end until the rest pass ``check_decode_mem``;
  new ratio ``min(1, (sum len(output_ids) + retract_decode_steps x n) / sum max_new_tokens)`` over
  those left), ``release_req`` (KV freed), ``Req.reset_for_retract`` (output kept: the next
  prefill covers prompt + output).

The step itself is the simulator's (sim/engine.py's numbered rule, vLLM-like mixed batches):

1. Requests with ``arrival <= now`` join the waiting queue (FIFO). Nothing waiting or running:
   ``now`` jumps to the next arrival.
2. A request in its prompt at the step's start un-fulls the batch (SGLang does not check
   ``batch_is_full`` while a chunked request runs, and clears it when the last batch shrank).
   Decode check: with D decoders and ``free`` KV tokens, if D <= free each decoder takes a token
   and the ratio decays ``max(ratio - decay, floor)``; else decoders are retracted (order above)
   while more than ``free`` remain; each victim's KV is freed, it keeps its generated tokens,
   joins the waiting queue's tail and will prefill ``input + generated`` tokens; the ratio is
   recomputed over the decoders left (1 if none); the batch is no longer full; the rest take their
   tokens. Budget = ``max_num_batched_tokens`` - decoders. A step that retracted admits no one.
3. ``rem_total = (capacity - KV held) - (ratio x R + P)``, R the sum over decoders of
   ``min(cap - generated, clip)``, P the outputs this pass reserved. Running prompts in order:
   chunk = min(prompt left, budget, int(rem_total)); none (<= 0) ends the pass; a chunk completing
   the prompt reserves ``min(cap, clip)`` in P.
4. Unless the step retracted or the batch is full: while budget > 0, fewer than ``max_num_seqs``
   run and someone waits, the head is admitted if ``prompt + min(max(cap - generated, 0), clip)
   < rem_total``, taking ``min(prompt, budget)`` tokens (reserving as in 3); else the batch is full
   and admission stops.
5. The step lasts ``setup.step_time(tokens, context, pairs, decoders)``, context the sum over running
   requests of prompt tokens in the KV (+ generated tokens for a decoder), pairs the chunks'
   attention pairs. At its end decoders emit a token; a completed prompt emits one (its first, or
   the next after a retraction); a request with all its tokens finishes, frees its KV and
   un-fulls the batch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sim.setup import attention_pairs


@dataclass(eq=False)
class SReq:
    """One request. ``generated`` = SGLang's ``len(output_ids)``; ``prompt`` = this attempt's
    prefill (input, or input + generated after a retraction); ``computed`` = its tokens in the KV."""

    id: int
    arrival: float
    input_len: int
    output_len: int
    cap: int                          # max_new_tokens
    generated: int = 0
    prompt: int = 0
    computed: int = 0
    kv: int = 0                       # KV tokens held
    decoding: bool = False
    first_token: float | None = None
    finish: float | None = None
    retractions: int = 0


@dataclass
class SStep:
    start: float
    tokens: int
    context: int
    pairs: int
    decoders: int
    ratio: float                      # the ratio after this step's decode check
    scheduled: dict = field(default_factory=dict)   # request id -> tokens this step
    retracted: list = field(default_factory=list)   # request ids, in retraction order
    admitted: list = field(default_factory=list)


class SglangRatio:
    """The stepper: ``add`` requests, then ``run()``; ``.reqs`` and ``.steps`` hold the results."""

    def __init__(self, setup):
        p = setup.kv
        self.setup, self.p = setup, p
        self.capacity = setup.kv_capacity_tokens
        self.ratio = p.init_new_token_ratio
        self.full = False
        self.reqs: list[SReq] = []
        self.pending: list[SReq] = []
        self.waiting: list[SReq] = []
        self.running: list[SReq] = []          # admission order (SGLang's batch order)
        self.now = 0.0
        self.steps: list[SStep] = []
        self.seen = Counter()                  # which branches of the rule ran (for the tests' coverage)

    def add(self, arrival, input_len, output_len) -> SReq:
        cap = self.p.max_new_tokens or output_len
        assert cap >= output_len
        r = SReq(len(self.reqs), float(arrival), int(input_len), int(output_len), cap, prompt=int(input_len))
        self.reqs.append(r)
        self.pending.append(r)
        return r

    # --- the rule's quantities -------------------------------------------------------------------
    def held(self) -> int:
        return sum(q.kv for q in self.running)

    def reserved_outputs(self) -> int:
        return sum(min(q.cap - q.generated, self.p.clip_max_new_tokens) for q in self.running if q.decoding)

    def rem_total(self, reserved_this_pass: int) -> float:
        return (self.capacity - self.held()) - (self.ratio * self.reserved_outputs() + reserved_this_pass)

    def total_tokens(self, q: SReq) -> int:
        return q.prompt + min(max(q.cap - q.generated, 0), self.p.clip_max_new_tokens)

    # --- one step ---------------------------------------------------------------------------------
    def _decode_check(self, step: SStep) -> None:
        decoders = [q for q in self.running if q.decoding]
        if not decoders:
            return
        free = self.capacity - self.held()
        p = self.p
        if len(decoders) <= free:
            self.ratio = max(self.ratio - p.new_token_ratio_decay, p.min_new_token_ratio)
            self.seen["ratio at its floor"] += self.ratio == p.min_new_token_ratio
        else:
            order = list(decoders)
            order.sort(key=lambda q: (q.generated, -q.input_len), reverse=True)
            self.seen["retraction"] += 1
            self.seen["retraction behind waiting"] += bool(self.waiting)
            while len(order) > free:
                v = order.pop()
                free += v.kv
                v.kv = v.computed = 0
                v.decoding = False
                v.prompt = v.input_len + v.generated
                v.retractions += 1
                self.running.remove(v)
                self.waiting.append(v)
                step.retracted.append(v.id)
            self.seen["several retracted"] += len(step.retracted) > 1
            self.full = False
            if order:
                done = sum(q.generated for q in order)
                caps = sum(q.cap for q in order)
                self.ratio = min(1.0, (done + p.retract_decode_steps * len(order)) / caps)
            else:
                self.ratio = 1.0
            decoders = order
        for q in decoders:
            q.kv += 1
            step.scheduled[q.id] = 1

    def _schedule_chunk(self, q: SReq, give: int, step: SStep, reserved: int) -> int:
        q.kv += give
        step.scheduled[q.id] = give
        step.pairs += attention_pairs(q.computed, give)
        if q.computed + give == q.prompt:
            return reserved + min(q.cap, self.p.clip_max_new_tokens)
        return reserved

    def step(self) -> SStep | None:
        while self.pending and self.pending[0].arrival <= self.now:
            self.waiting.append(self.pending.pop(0))
        if not self.waiting and not self.running:
            self.now = self.pending[0].arrival
            return None
        setup = self.setup
        # context before the step: prompt tokens in the KV, plus generated ones for decoders
        step = SStep(self.now, 0, 0, 0, 0, 0.0)
        if any(not q.decoding for q in self.running):
            self.full = False                  # a chunked request runs: the pass tries admission
        self._decode_check(step)
        retracted = bool(step.retracted)
        step.ratio = self.ratio
        budget = setup.max_num_batched_tokens - len(step.scheduled)
        reserved = 0
        for q in [q for q in self.running if not q.decoding]:
            room = int(self.rem_total(reserved))
            self.seen["chunk cut by memory"] += room < min(q.prompt - q.computed, budget)
            give = min(q.prompt - q.computed, budget, room)
            if give <= 0:
                break
            reserved = self._schedule_chunk(q, give, step, reserved)
            budget -= give
        if self.full and not retracted and self.waiting and budget > 0 and len(self.running) < setup.max_num_seqs:
            self.seen["held back while full"] += self.total_tokens(self.waiting[0]) < self.rem_total(reserved)
        if not retracted and not self.full:
            while budget > 0 and len(self.running) < setup.max_num_seqs and self.waiting:
                h = self.waiting[0]
                if self.total_tokens(h) >= self.rem_total(reserved):
                    self.full = True
                    break
                self.waiting.pop(0)
                self.running.append(h)
                step.admitted.append(h.id)
                give = min(h.prompt, budget)
                reserved = self._schedule_chunk(h, give, step, reserved)
                budget -= give
        if not step.scheduled:
            if retracted:
                return None                    # everyone was retracted: no model step
            raise RuntimeError(f"request {self.waiting[0].id} can never be admitted")
        step.tokens = sum(step.scheduled.values())
        step.context = sum(q.input_len + q.generated if q.decoding else q.computed for q in self.running)
        step.decoders = sum(1 for q in self.running if q.decoding)
        self.now = self.now + setup.step_time(step.tokens, step.context, step.pairs, step.decoders)
        self._end_of_step(step)
        self.steps.append(step)
        return step

    def _end_of_step(self, step: SStep) -> None:
        byid = {q.id: q for q in self.running}
        for rid, n in step.scheduled.items():
            q = byid[rid]
            if not q.decoding:
                q.computed += n
                if q.computed < q.prompt:
                    continue                   # a chunk short of the prompt's end emits nothing
                q.decoding = True
                if q.first_token is None:
                    q.first_token = self.now
            q.generated += 1
            if q.generated == q.output_len:
                q.finish = self.now
                q.kv = 0
                self.running.remove(q)
                self.full = False

    def run(self, max_steps: int = 200_000):
        for _ in range(max_steps):
            if all(r.finish is not None for r in self.reqs):
                return self
            self.step()
        raise RuntimeError(f"no end after {max_steps} steps")


def sglang_run(setup, arrivals, inputs, outputs) -> SglangRatio:
    sim = SglangRatio(setup)
    for a, i, o in zip(arrivals, inputs, outputs):
        sim.add(a, i, o)
    return sim.run()
