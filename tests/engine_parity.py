"""Shared checks of the engine against tests/vllm_reference.py's stepper (priority, speculative
decoding with paged KV): the per-request and per-step fields compared bit for bit, and an
instance driven request by request at its arrivals."""

import numpy as np

from sim.engine import Instance


def assert_same(res, ref, *, extra_s: bool = False) -> None:
    """First-token and finish times, preemptions, and every step's start, tokens, context and
    decoders (with ``extra_s``: the draft seconds too) equal the reference's."""
    assert np.array_equal(res.first_token, [r.first_token for r in ref.reqs])
    assert np.array_equal(res.finish, [r.finish for r in ref.reqs])
    assert res.preemptions.tolist() == [r.preemptions for r in ref.reqs]
    log = res.steps
    assert np.array_equal(log.start, [s.start for s in ref.steps])
    assert log.tokens.tolist() == [s.tokens for s in ref.steps]
    assert log.context.tolist() == [s.context for s in ref.steps]
    assert log.decoders.tolist() == [s.decoders for s in ref.steps]
    if extra_s:
        assert np.array_equal(log.extra_s, [s.extra_s for s in ref.steps])


def driven_run(setup, arrivals, inputs, outputs, cuts=(), **per_request):
    """Each request submitted at its arrival after advancing to it (a fleet's way), with extra
    ``advance`` cuts at the times in ``cuts``; the instance's result. ``per_request``: lists of
    ``Instance.submit`` keywords, one value per request (``priority=[...]``, ``prefilled=[...]``,
    ``prefix=[...]``); None for a keyword not given."""
    inst = Instance(setup)
    given = {k: v for k, v in per_request.items() if v is not None}
    times = sorted([(a, 0, i) for i, a in enumerate(arrivals)] + [(c, 1, -1) for c in cuts])
    for t, kind, i in times:
        inst.advance(t)
        if kind == 0:
            inst.submit(t, inputs[i], outputs[i], **{k: v[i] for k, v in given.items()})
    inst.advance()
    return inst.result()
