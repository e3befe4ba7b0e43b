"""Which panel positions ``python -m course.memo build`` stores: one function per chapter, returning
pairs of a ``course.memo.shipped`` function and the calls the panel's controls make to it.

Kept apart from the chapter modules on purpose: a table's fingerprint covers the code its answers
depend on (``sim/``, the chapter's module), not this list of positions, so widening a grid keeps
the answers already stored (``build`` runs only the new calls). Each grid lists the positions one
control away from the panel's own first (a learner's first moves), then the rest.
"""

from __future__ import annotations

from course import memo


def _then(first: list, rest: list) -> list:
    return list(dict.fromkeys(first + rest))


def chapter_02() -> list:
    """``instance`` and ``latency_curve`` (a ``sim.plan`` and seven 1500-request runs): each slider
    over its values and each dropdown over its options, the others at the chapter's; the section's
    suggested pairs of moves; every second move (``second_moves_02``); then every model x GPU x TP x weight / KV dtype at the chapter's
    request and SLOs. QPS and price need no entry: they only resize a plan."""
    from course import panel as p
    base = dict(input_len=p.INPUT_LEN, output_len=p.OUTPUT_LEN, mfu=p.MFU, hw=p.CHAPTER, ttft_slo=p.TTFT_SLO_S,
                tpot_slo=p.TPOT_SLO_S)
    first = [dict(base, hw=hw) for hw in _one_dropdown_02()]
    for name, options in _slider_options_02().items():
        first += [dict(base, **{name: v}) for v in options]
    first += [dict(base, input_len=32768, mfu=0.1), dict(base, input_len=32768, output_len=16)]
    first += second_moves_02(base)
    rest = [dict(base, hw=p.Hardware(m, g)) for m in p.MODEL_OPTIONS for g in p.GPU_OPTIONS]
    rest += [dict(base, hw=p.Hardware(m, g, t, w, kv)) for m in p.MODEL_OPTIONS for g in p.GPU_OPTIONS
             for t in p.TP_OPTIONS for w in p.DTYPE_OPTIONS for kv in p.DTYPE_OPTIONS]
    calls = []
    for x in first + rest:
        setup, _ = p._setup_or_reason(x["hw"], x["mfu"], x["input_len"], x["output_len"])
        if setup is not None:            # design() asks only for choices that can run
            calls.append((x["input_len"], x["output_len"], x["mfu"], x["hw"], x["ttft_slo"], x["tpot_slo"]))
    calls = list(dict.fromkeys(calls))
    return [(p.instance.__wrapped__, calls), (p.latency_curve.__wrapped__, calls)]


SLIDERS_02 = ("input_len", "output_len", "mfu", "ttft_slo", "tpot_slo")     # chapter 02's search sliders


def _slider_options_02() -> dict:
    """Each of chapter 02's search sliders (``SLIDERS_02``) -> its positions."""
    from course import panel as p
    return dict(zip(SLIDERS_02, (p.INPUT_OPTIONS, p.OUTPUT_OPTIONS, p.mfu_options(), p.TTFT_SLO_OPTIONS,
                                 p.TPOT_SLO_OPTIONS)))


def _one_dropdown_02() -> list:
    """The chapter's hardware with one of its dropdowns moved (the two dtypes count as one)."""
    from course import panel as p
    return ([p.Hardware(model=m) for m in p.MODEL_OPTIONS] + [p.Hardware(gpu=g) for g in p.GPU_OPTIONS]
            + [p.Hardware(tp=t) for t in p.TP_OPTIONS]
            + [p.Hardware(weight_dtype=w, kv_dtype=kv) for w in p.DTYPE_OPTIONS for kv in p.DTYPE_OPTIONS])


def second_moves_02(base: dict) -> list:
    """Chapter 02's positions two moves away: every pair of its search sliders at two of their
    values, and each one-dropdown hardware change with each slider at each value (a learner's
    second move after a first one)."""
    from course import panel as p
    options = _slider_options_02()
    pairs = [dict(base, **{a: x, b: y}) for i, a in enumerate(SLIDERS_02) for b in SLIDERS_02[i + 1:]
             for x in options[a] for y in options[b]]
    with_hw = [dict(base, hw=hw, **{a: x}) for hw in _one_dropdown_02() for a in SLIDERS_02 for x in options[a]]
    return pairs + with_hw


def chapter_03() -> list:
    """``gateway`` (a fleet run) for every router with and without the failure at each instance
    count and each session rate one slider away from the panel's, then every position."""
    from course import ch03
    panel = ch03.GatewayPanel
    call = lambda r, n, q, f: memo.kwargs_call(router=r, instances=n, session_rate=q, failure=f)   # noqa: E731
    sizes = [(n, 4.0) for n in panel.INSTANCE_OPTIONS] + [(8, q) for q in panel.RATE_OPTIONS]
    first = [call(r, n, q, f) for r in ch03.ROUTER_OPTIONS for n, q in sizes for f in (True, False)]
    rest = [call(r, n, q, f) for r in ch03.ROUTER_OPTIONS for n in panel.INSTANCE_OPTIONS
            for q in panel.RATE_OPTIONS for f in (True, False)]
    return [(ch03._gateway_cached.__wrapped__, _then(first, rest))]


def chapter_04() -> list:
    """``closed_loop_run`` over chapter 02's instance, for every client count: without drafts, then
    each k, alpha and draft cost with the others at the panel's defaults, then every position."""
    from course import ch04
    from course.panel import chapter_setup
    base, d = chapter_setup(), ch04.PANEL_DEFAULTS
    drafts = ([(k, d["alpha"], d["draft_cost"]) for k in ch04.K_OPTIONS]
              + [(d["k"], a, d["draft_cost"]) for a in ch04.ALPHA_OPTIONS]
              + [(d["k"], d["alpha"], c) for c in ch04.DRAFT_COST_OPTIONS])
    every = [(k, a, c) for k in ch04.K_OPTIONS for a in ch04.ALPHA_OPTIONS for c in ch04.DRAFT_COST_OPTIONS]
    calls = [(base, n) for n in ch04.CLIENTS]
    calls += [(ch04.spec_setup(base, *x), n) for x in _then(drafts, every) for n in ch04.CLIENTS]
    return [(ch04.closed_loop_run.__wrapped__, calls)]


def chapter_05() -> list:
    """``cost_row`` (a ``sim.plan``) at every TP size ("auto" tries each): every model on every GPU
    (FP8 weights and KV), every weight x KV format of the chapter's model on H100, then every
    position of the model, GPU, weight and KV dropdowns."""
    from course import ch05
    spec = ch05.QuantPanel.controls_spec(None)
    models, gpus, ws, kvs = (spec[k][1] for k in ("model", "gpu", "weight_dtype", "kv_dtype"))
    first = [(m, g, "fp8", "fp8") for m in models for g in gpus]
    first += [(ch05.MODEL, "h100-sxm", w, kv) for w in ws for kv in kvs]
    rest = [(m, g, w, kv) for m in models for g in gpus for w in ws for kv in kvs]
    calls = [(m, g, tp, w, kv) for m, g, w, kv in _then(first, rest) for tp in ch05.TPS]
    return [(ch05.cost_row.__wrapped__, calls)]


def chapter_07() -> list:
    """``panel_answer`` for every trace, layout and SLO pair on InfiniBand, every link for the
    panel's trace and layout, then every position."""
    from course import ch07
    names, lays = list(ch07.TRACE_NAMES), ch07.layouts()
    first = [(n, lay, t, p, "infiniband") for n in names for lay in lays for t in ch07.SLO_TTFT for p in ch07.SLO_TPOT]
    first += [("conv", "3P1D", t, p, link) for t in ch07.SLO_TTFT for p in ch07.SLO_TPOT for link in ch07.LINK_NAMES]
    rest = [(n, lay, t, p, link) for link in ch07.LINK_NAMES for n in names for lay in lays
            for t in ch07.SLO_TTFT for p in ch07.SLO_TPOT]
    return [(ch07.panel_answer.__wrapped__, _then(first, rest))]


def chapter_09() -> list:
    """``tp_row`` (a ``sim.plan``) for every model, GPU, TP size and weight format of the panel,
    called as ``answer`` (the GPU as chosen) and ``_extras`` (its preset key) call it."""
    from course import ch09
    from sim import presets
    spec = ch09.ParallelPanel.controls_spec(None)
    every = [(m, g, tp, w) for m in spec["model"][1] for g in spec["gpu"][1] for tp in spec["tp"][1]
             for w in spec["weight_dtype"][1]]
    calls = [(m, presets.gpu_key(g), tp, w) for m, g, tp, w in every] + every
    return [(ch09.tp_row.__wrapped__, list(dict.fromkeys(calls)))]


def chapter_08() -> list:
    """``poisson_point`` (one Poisson run) without drafts at every rate, then each k, alpha, draft
    cost and rate with the others at the panel's defaults, then every position."""
    from course import ch08
    from sim.speculative import Speculative
    base, d = ch08.base_setup(), ch08.PANEL_DEFAULTS
    on = lambda k, a, c: ch08.dataclasses.replace(base, speculative=Speculative(k=k, alpha=a, draft_cost=c))  # noqa: E731
    first = [(base, r) for r in ch08.RATE_OPTIONS]
    first += [(on(k, d["alpha"], d["draft_cost"]), d["rate"]) for k in ch08.K_OPTIONS]
    first += [(on(d["k"], a, d["draft_cost"]), d["rate"]) for a in ch08.ALPHA_OPTIONS]
    first += [(on(d["k"], d["alpha"], c), d["rate"]) for c in ch08.DRAFT_COST_OPTIONS]
    first += [(on(d["k"], d["alpha"], d["draft_cost"]), r) for r in ch08.RATE_OPTIONS]
    rest = [(on(k, a, c), r) for k in ch08.K_OPTIONS for a in ch08.ALPHA_OPTIONS for c in ch08.DRAFT_COST_OPTIONS
            for r in ch08.RATE_OPTIONS]
    return [(ch08.poisson_point.__wrapped__, _then(first, rest))]


def chapter_10() -> list:
    """``run_mix`` (a fleet run) at every position of the panel, and the same GPUs as one pool."""
    from course import ch10
    spec = ch10.LongPanel.controls_spec(None)
    values = lambda name: [v for _, v in spec[name][1]]          # noqa: E731
    calls = [(n, k, share, length) for share in values("long_share") for length in values("long_len")
             for n in values("instances") for k in values("long_instances")]
    return [(ch10.run_mix.__wrapped__, calls)]


def chapter_06() -> list:
    """``grid_point`` (a fleet run on the Mooncake half hour) at every position of the panel."""
    from course import ch06
    return [(ch06.grid_point.__wrapped__, ch06.grid_keys())]


GRIDS = {"02": chapter_02, "03": chapter_03, "04": chapter_04, "05": chapter_05, "06": chapter_06, "07": chapter_07,
         "08": chapter_08, "09": chapter_09, "10": chapter_10}
