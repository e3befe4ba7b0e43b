"""The KV manager the scheduler asks (vLLM v1's line: the scheduler asks, the KV manager answers).

``sim.engine.Instance`` makes one manager per instance, from ``Setup.kv`` (``sim.kv.kv_manager``), and
talks to it through these calls only; it never sees a block or a reservation:

    head_fits(inst, r)        could the queue's head ``r`` be admitted now? (no state changes)
    admit(inst, r)            admit ``r``: None (it does not fit), its cached tokens (prefill
                              starts after them: prefix hits, or a swapped prompt's progress), or
                              RESUME (its KV came back whole: it decodes from this step on)
    allocate_step(inst, step) the decoders' KV for this step; preempts running requests (the
                              victim is ``victim(inst)``, the scheduler's ``Instance.preempt``
                              undoes its progress, and notes it) until the rest fit; returns None,
                              or the decoders the pass did not reach (then ``stall(r)`` each)
    allocate_chunk(inst, r, n) KV for ``r``'s prompt chunk (its KV to hold ``n`` tokens),
                              preempting likewise; False if ``r`` itself was preempted
    quiet_steps(step, k)      how many of ``k`` decode-only steps from ``step`` fit without one
    grow(step, k)             hand out those steps' KV
    start_decoding(r, kv, s) / stop_decoding(r)    a request starts or stops decoding
    free(inst, r)             ``r`` finished: its KV is released
    free_tokens(pending) / cached_prefix_tokens(prefix, n)    what a router may ask

Two optional hooks, used by ``sim.kv.ratio.RatioManager`` (SGLang): ``chunk_room(inst, r, n)``
cuts a running prompt's chunk of ``n`` tokens to the memory left, and ``requeue_tail = True`` sends
preempted requests to the waiting queue's tail instead of its head.

Seconds beyond the roofline that a manager's work costs (swap copies, host read-back) and the step
log's flags for them accumulate in ``extra`` and ``flags``; the engine adds them to the step being
built and zeroes them. ``Reserve`` (below) is the handbook's rule; ``sim.kv.paged.PagedManager`` is
vLLM's block manager with preemption.
"""

from __future__ import annotations

RESUME = -1          # admit's answer for a request whose KV came back whole (a swapped-in decoder)


class ReserveManager:
    """The handbook's rule: a request reserves ``input_len + output_len`` tokens of KV at admission
    and frees them at its finish; nothing is ever preempted, so decode steps need nothing."""

    preempts = False

    def __init__(self, setup):
        self.capacity = setup.kv_capacity_tokens
        self.used = 0                  # reserved tokens
        self.extra, self.flags = 0.0, 0

    def head_fits(self, inst, r: int) -> bool:
        return self.used + inst.inp[r] + inst.out[r] <= self.capacity

    def admit(self, inst, r: int):
        need = inst.inp[r] + inst.out[r]
        if self.used + need > self.capacity:
            return None
        self.used += need
        return 0

    def allocate_step(self, inst, step: int) -> None:
        pass

    def allocate_chunk(self, inst, r: int, tokens: int) -> bool:
        return True

    def quiet_steps(self, step: int, k: int) -> int:
        return k

    def grow(self, step: int, k: int) -> None:
        pass

    def start_decoding(self, r: int, kv_tokens: int, step: int) -> None:
        pass

    def stop_decoding(self, r: int) -> None:
        pass

    def free(self, inst, r: int) -> None:
        self.used -= inst.inp[r] + inst.out[r]

    def free_tokens(self, pending: int) -> int:
        """Unreserved tokens, with ``pending`` tokens of finishes not yet seen counted as held."""
        return self.capacity - self.used - pending

    def cached_prefix_tokens(self, prefix, input_len: int) -> int:
        return 0
