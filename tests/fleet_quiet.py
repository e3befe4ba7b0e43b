"""A prototype of the engine hook ``Instance.quiet_until()`` that the fleet uses when present
(sim/fleet/worker.py), for the tests: the fleet's side of the hook is checked against the plain fleet
before the engine has it. It reads the engine's private state, so it is a test helper and nothing
more; the hook's contract and the measured gain are in the fleet's report (issue 17, item 7).

Contract: a time T such that, with nothing more submitted, the gateway's accessors (outstanding,
running_at, queue_len, free_kv_tokens, cached_prefix_tokens, unfinished_at) asked at any t < T
answer the same whether or not ``advance(t)`` is called first; T <= now is always allowed (then
nothing is skipped).

The rule for the handbook's reservation rule (no paged KV, no speculation): when nothing waits and
nothing is in prefill, every running request decodes, so until the next finish every step has the
same D decoders over a context of at least C (it only grows), and lasts at least step_time(D, C)
(the roofline is nondecreasing in both). The next finish is at the end of step ``root`` (the finish
heap's head), ``root - step + 1`` steps from now; T = now + (root - step) x step_time(D, C) keeps
one whole step of slack for the float sums.
"""

from __future__ import annotations

from sim import engine


def quiet_until(inst) -> float:
    if inst.kvm is not None or inst.spec is not None:
        return inst.now
    if inst.admitted < len(inst.arr) or inst.running == 0:
        return inst.now
    fast = inst._fast
    if fast is not None:
        s = fast.s
        if s[engine.S_PF_LEN] or not s[engine.S_HEAP_N]:
            return inst.now
        root = int(fast.work[engine.W_STEP, 0])
    else:
        if inst.prefill or not inst.finishes:
            return inst.now
        root = inst.finishes[0][0]
    return inst.now + (root - inst.step) * inst.setup.step_time(inst.decoders, inst.context)


def prototype_available() -> bool:
    """Whether the engine still has the private state this prototype reads."""
    names = ("kvm", "spec", "admitted", "arr", "running", "_fast", "prefill", "finishes", "step",
             "decoders", "context", "now")
    from conftest import tiny_setup
    inst = engine.Instance(tiny_setup())
    return (all(hasattr(inst, n) for n in names) and hasattr(engine, "S_PF_LEN")
            and hasattr(engine, "S_HEAP_N") and hasattr(engine, "W_STEP"))
