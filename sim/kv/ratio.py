"""SGLang's admission rule as a KV policy: reserve a fraction (``new_token_ratio``) of the running
requests' remaining outputs, retract decoders when a decode step runs out of KV.

Read at sgl-project/sglang (restated, not copied):
``python/sglang/srt/managers/schedule_policy.py`` at ad0119fdde519598c25f5c48b95dacaa2b85d607
(``PrefillAdder.__init__``, ``_get_running_request_total_token_offset``, ``rem_total_tokens``,
``add_chunked_req``, ``add_one_req``, ``budget_state``); ``python/sglang/srt/managers/scheduler.py``
at 000eaffacf048e51b64d4d72985ef8f0b7054b39 (``Scheduler.__init__``: the ratio's start, floor and
decay; ``get_new_batch_prefill``, ``update_running_batch``, ``_extend_requests_to_queue``) and
``schedule_batch.py`` at the same commit (``check_decode_mem``, ``retract_decode``, ``release_req``,
``Req.reset_for_retract``); the defaults from ``python/sglang/global_config.py`` (0.7, factor 0.14,
600 decay steps, ``retract_decode_steps`` 20) and ``server_args.py`` (``schedule_conservativeness``
1.0, ``page_size`` 1, ``schedule_policy`` "fcfs").

The rule, in the engine's step (sim/engine.py), KV counted in tokens (SGLang's page size 1):

1. The ratio starts at ``init_new_token_ratio``. A step with decoders first checks that each gets
   its token of KV. If so, the ratio decays: ``max(ratio - decay, min_new_token_ratio)``. If not,
   decoders are retracted, ordered by (tokens generated, descending; prompt length, ascending;
   running order) and taken from the end of that order (fewest generated first, then the longest
   prompt, then the one that joined the batch last), until the rest fit this step's tokens.
   A victim's KV is freed; it keeps its output and goes to the waiting queue's tail (behind the
   requests waiting now, ahead of later arrivals); on readmission it prefills its prompt plus the
   tokens it had generated (its next token comes at the end of that prefill). The ratio becomes
   ``min(1, (sum of the remaining decoders' generated tokens + retract_decode_steps x their
   number) / (sum of their max_new_tokens))``. That step admits no one (the engine's rule 2).
   A step without decoders neither checks nor decays.
2. Every step's admission pass sees ``rem_total = free - (ratio x R + P)``: ``free`` the KV not
   held (this step's decode tokens and chunks already taken), ``R`` the sum over decoders of
   ``min(max_new_tokens - generated, clip_max_new_tokens)``, ``P`` what this pass reserved: a
   prompt whose last chunk is scheduled this step reserves ``min(max_new_tokens, clip)`` (its
   whole output, no ratio: SGLang counts the ratio only for the running batch).
   The running prompt's chunk is cut to ``int(rem_total)`` (``add_chunked_req``). The queue's head
   is admitted if ``prompt left + min(max_new_tokens - generated, clip) < rem_total`` (strict, as
   ``add_one_req``); otherwise admission stops and the batch is "full": no admission is tried
   again until a request finishes, a decoder is retracted, or a step starts with a request in
   its prompt (SGLang's ``batch_is_full``: cleared when the batch shrinks, not checked while a
   chunked request runs), however far the ratio decays meanwhile.

``max_new_tokens`` is the cap the clients send: None for each request's own output length (it
stops at its cap), or one number >= every output length (requests stop early, as with EOS).

Modelled otherwise than SGLang, or not at all:

- the step: the engine's, vLLM-like (decoders and prompt chunks in one batch, like SGLang's
  ``--enable-mixed-chunk``); SGLang by default runs prefill batches and decode batches apart. So
  here every step with decoders checks decode memory and decays the ratio (SGLang: decode
  iterations only), and the pass sees the free KV after the step's decode tokens;
- ``R x ratio`` is one product of the summed integers (SGLang sums per-request products: the same
  up to float rounding);
- the radix cache (prefix sharing, eviction of cached tokens counted as free), hierarchical
  cache, ``max_prefill_tokens`` (the engine's one budget ``max_num_batched_tokens`` stands),
  ``ignore_eos`` requests (SGLang admits those by another rule), priority scheduling and its
  preemption, speculative decoding, pages larger than one token, PD decode instances
  (prefilled requests are refused);
- retraction of the last decoder: SGLang asserts that it gets its token; here, if even it does
  not fit (a prompt holds the rest), it is retracted too, and with no decoder left the ratio
  becomes 1.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from sim.result import RECOMPUTE
from sim.validate import check_int, check_number


@dataclass(frozen=True)
class RatioReserve:
    """SGLang's ``new_token_ratio`` admission with retraction (see the module docstring).

    init_new_token_ratio   the ratio at start, in (0, 1] (SGLang: 0.7 x schedule_conservativeness)
    min_new_token_ratio    its floor, in (0, init] (SGLang: init x 0.14 = 0.098)
    new_token_ratio_decay  subtracted per decode step, >= 0 (SGLang: (init - min) / 600)
    retract_decode_steps   decode steps of headroom in the ratio set after a retraction, >= 0 (20)
    clip_max_new_tokens    remaining outputs counted per request at most, >= 1 (4096)
    max_new_tokens         the clients' output cap: None (each request's output length) or a
                           whole number >= every output length
    """

    init_new_token_ratio: float = 0.7
    min_new_token_ratio: float = 0.7 * 0.14
    new_token_ratio_decay: float = (0.7 - 0.7 * 0.14) / 600
    retract_decode_steps: int = 20
    clip_max_new_tokens: int = 4096
    max_new_tokens: int | None = None
    name = "ratio"
    block_size = 1                      # KV counted in tokens (SGLang's default page_size)

    def __post_init__(self):
        check_number("RatioReserve.init_new_token_ratio", self.init_new_token_ratio, 0, note="(at most 1)")
        if self.init_new_token_ratio > 1:
            raise ValueError(f"RatioReserve.init_new_token_ratio must be in (0, 1], got {self.init_new_token_ratio!r}")
        check_number("RatioReserve.min_new_token_ratio", self.min_new_token_ratio, 0,
                     note="(at most init_new_token_ratio)")
        if self.min_new_token_ratio > self.init_new_token_ratio:
            raise ValueError(f"RatioReserve.min_new_token_ratio must be in (0, init_new_token_ratio = "
                             f"{self.init_new_token_ratio!r}], got {self.min_new_token_ratio!r}")
        check_number("RatioReserve.new_token_ratio_decay", self.new_token_ratio_decay, 0, strict=False,
                     note="(per decode step)")
        check_int("RatioReserve.retract_decode_steps", self.retract_decode_steps, 0)
        check_int("RatioReserve.clip_max_new_tokens", self.clip_max_new_tokens, 1)
        if self.max_new_tokens is not None:
            check_int("RatioReserve.max_new_tokens", self.max_new_tokens, 1)

    @classmethod
    def sglang(cls, schedule_conservativeness: float = 1.0) -> "RatioReserve":
        """SGLang's defaults for a ``--schedule-conservativeness`` (its scheduler's formulas)."""
        check_number("schedule_conservativeness", schedule_conservativeness, 0)
        init = min(0.7 * schedule_conservativeness, 1.0)
        low = min(init * 0.14, 1.0)
        return cls(init_new_token_ratio=init, min_new_token_ratio=low,
                   new_token_ratio_decay=(init - low) / 600)


class RatioManager:
    """``RatioReserve`` as the engine's KV manager (``sim.kv.manager``'s calls).

    Tokens held: ``used`` (prompt chunks as scheduled, one per decoder per step). Decoders are kept
    as aggregates: decoder r's remaining outputs at step s are ``a[r] - s``, counted at most
    ``clip``; ``R(s)`` is the unclipped decoders' ``sum(a) - n s`` plus ``clip`` per clipped one,
    a clipped decoder joining the others at step ``a[r] - clip`` (a heap)."""

    preempts = True
    requeue_tail = True                  # retracted requests join the waiting queue's tail

    def __init__(self, setup):
        if setup.prefix_cache is not None:
            raise ValueError("Setup.prefix_cache is not modelled with kv=RatioReserve (SGLang's radix "
                             "cache is not included); use kv='paged' for a prefix cache")
        p: RatioReserve = setup.kv
        self.policy = p
        self.capacity = setup.kv_capacity_tokens
        self.used = 0
        self.ratio = p.init_new_token_ratio
        self.clip = p.clip_max_new_tokens
        self.extra, self.flags = 0.0, 0
        self.inst = None                  # the instance (its per-request lists), set at first admission
        self.cap: dict[int, int] = {}     # running or retracted request -> its max_new_tokens
        self.prompt_held: dict[int, int] = {}    # request in its prompt -> tokens of KV it holds
        self.a: dict[int, int] = {}       # decoder -> a: its remaining outputs at step s are a - s
        self.clipped: set[int] = set()
        self.heap: list = []              # (step it unclips, decoder), lazily pruned
        self.n_u = self.sum_a = 0         # unclipped decoders: count and sum of a
        self.step = 0                     # the step the aggregates are advanced to
        self.pass_reserved = 0            # P: outputs reserved by this step's completing prompts
        self.full = False                 # SGLang's batch_is_full: admission waits for a release
        self.refused_at = -1              # step whose admission head_fits found refused
        self.retracted: set[int] = set()

    # --- the aggregates -----------------------------------------------------------------------

    def _advance(self, step: int) -> None:
        """Move decoders whose remaining outputs drop to ``clip`` by ``step`` to the unclipped sum."""
        self.step = step
        heap, clipped = self.heap, self.clipped
        while heap and heap[0][0] <= step:
            u, r = heapq.heappop(heap)
            if r in clipped and self.a[r] - self.clip == u:
                clipped.discard(r)
                self.n_u += 1
                self.sum_a += self.a[r]

    def _reserved_outputs(self, step: int) -> int:
        """R(step): the decoders' remaining outputs, each at most ``clip``."""
        self._advance(step)
        return self.sum_a - self.n_u * step + self.clip * len(self.clipped)

    def _rem_total(self, step: int) -> float:
        return (self.capacity - self.used) - (self.ratio * self._reserved_outputs(step) + self.pass_reserved)

    def _decay(self) -> None:
        p = self.policy
        self.ratio = max(self.ratio - p.new_token_ratio_decay, p.min_new_token_ratio)

    def start_decoding(self, r: int, kv_tokens: int, step: int) -> None:
        """From ``step`` on ``r`` decodes; its KV holds ``kv_tokens``, so it has generated
        ``kv_tokens - input_len + 1`` tokens before that step."""
        self.prompt_held.pop(r, None)
        a = self.cap[r] - (kv_tokens - self.inst.inp[r] + 1) + step
        self.a[r] = a
        if a - self.clip > self.step:
            self.clipped.add(r)
            heapq.heappush(self.heap, (a - self.clip, r))
        else:
            self.n_u += 1
            self.sum_a += a

    def stop_decoding(self, r: int) -> None:
        a = self.a.pop(r)
        if r in self.clipped:
            self.clipped.discard(r)
        else:
            self.n_u -= 1
            self.sum_a -= a

    # --- admission ------------------------------------------------------------------------------

    def _total(self, inst, r: int) -> int:
        """SGLang's ``total_tokens``: the prompt left to prefill plus the outputs left, clipped."""
        cap = self.cap.get(r)
        if cap is None:
            if inst.pre[r]:
                raise ValueError("kv=RatioReserve does not model PD decode instances (prefilled requests); "
                                 "use kv=None or 'paged' there")
            cap = self.policy.max_new_tokens or inst.out[r]
            if cap < inst.out[r]:
                raise ValueError(f"RatioReserve.max_new_tokens must be >= every output_len (the clients' cap), "
                                 f"got {cap} for a request of output_len {inst.out[r]}")
            self.cap[r] = cap
        generated = inst.target[r] - inst.inp[r]
        return inst.target[r] + min(max(cap - generated, 0), self.clip)

    def head_fits(self, inst, r: int) -> bool:
        """Whether the admission of ``r`` in this step (after its decode tokens and decay) would
        succeed; a refusal is noted so that a quiet run starting here marks the batch full."""
        if self.full:
            return False
        self.inst = inst
        step, D = inst.step, len(self.a)
        free = self.capacity - self.used
        if D > free:
            return True                       # a retraction step: the event step decides
        ratio = self.ratio
        if D:
            p = self.policy
            ratio = max(ratio - p.new_token_ratio_decay, p.min_new_token_ratio)
        rem_total = (free - D) - (ratio * self._reserved_outputs(step) + 0)
        if self._total(inst, r) < rem_total:
            return True
        self.refused_at = step
        return False

    def admit(self, inst, r: int):
        self.inst = inst
        if self.full:
            return None
        total = self._total(inst, r)
        if total >= self._rem_total(inst.step):
            self.full = True
            return None
        inst.stats["prompt_tokens"][r] += inst.target[r]
        self.prompt_held[r] = 0
        if r in self.retracted:
            self.retracted.discard(r)
            self.flags |= RECOMPUTE
        return 0

    # --- the step's KV and retraction -----------------------------------------------------------

    def allocate_step(self, inst, step: int) -> None:
        """Decode check: each decoder's token fits (the ratio decays) or decoders are retracted."""
        self.inst = inst
        self.pass_reserved = 0
        if inst.prefill:
            self.full = False                 # a chunked request runs: SGLang tries admission
        self._advance(step)
        D = len(self.a)
        if not D:
            return
        free = self.capacity - self.used
        if D <= free:
            self._decay()
            self.used += D
            return
        self._retract(inst, step, free)

    def _retract(self, inst, step: int, free: int) -> None:
        inp, cap, a = inst.inp, self.cap, self.a
        order = [r for r in inst.run_order if r in a]            # the running batch, in its order
        order.sort(key=lambda r: (cap[r] - (a[r] - step), -inp[r]), reverse=True)
        while len(order) > free:
            victim = order.pop()
            computed, generated = inst.preempt(victim)           # calls stop_decoding(victim)
            self.used -= computed
            free += computed
            inst.computed[victim] = 0
            inst.target[victim] = inp[victim] + generated
            self.retracted.add(victim)
        self.full = False
        if order:
            done = sum(cap[r] - (a[r] - step) for r in order)
            total = sum(cap[r] for r in order)
            self.ratio = min(1.0, (done + self.policy.retract_decode_steps * len(order)) / total)
        else:
            self.ratio = 1.0
        self.used += len(order)

    def chunk_room(self, inst, r: int, tokens: int) -> int:
        """The running prompt's chunk, cut to ``int(rem_total)`` (``add_chunked_req``)."""
        room = int(self._rem_total(inst.step))
        return tokens if tokens <= room else room

    def allocate_chunk(self, inst, r: int, tokens: int) -> bool:
        """KV for ``r``'s chunk, its KV to hold ``tokens``; a prompt completing this step reserves
        its outputs for the rest of the pass."""
        self.used += tokens - self.prompt_held[r]
        self.prompt_held[r] = tokens
        if tokens == inst.target[r]:
            self.pass_reserved += min(self.cap[r], self.clip)
        return True

    def quiet_steps(self, step: int, k: int) -> int:
        """Decode-only steps from ``step`` whose tokens fit (admission is refused throughout: the
        head was refused, or the batch is full, until the finish that ends the run)."""
        D = len(self.a)
        if not D:
            return k
        fit = (self.capacity - self.used) // D
        return k if k <= fit else fit

    def grow(self, step: int, k: int) -> None:
        if k <= 0:
            return
        if self.refused_at == step:
            self.full = True                  # step ``step`` tried the head and was refused
        self.used += len(self.a) * k
        p = self.policy
        for _ in range(k):                    # the event steps' decay, k times, until it stops moving
            ratio = max(self.ratio - p.new_token_ratio_decay, p.min_new_token_ratio)
            if ratio == self.ratio:
                break
            self.ratio = ratio

    # --- finishes, and what a router asks ---------------------------------------------------

    def release_order(self, requests) -> list:
        """Requests finishing in one step, in the order their KV is released: any order gives
        the same free pool here (no prefix cache orders blocks)."""
        return requests

    def free(self, inst, r: int) -> None:
        self.used -= inst.inp[r] + inst.out[r] - 1
        self.prompt_held.pop(r, None)
        del self.cap[r]
        self.full = False

    def free_tokens(self, pending: int) -> int:
        """KV tokens not held, with ``pending`` tokens of finishes not yet seen counted as held."""
        return self.capacity - self.used - pending

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        return 0
