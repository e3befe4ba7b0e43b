"""Reference solution for 139: the pipeline bubble."""
import math
import numbers


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _positive(name, value):
    _number(name, value)
    if not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name, value):
    _number(name, value)
    if not value >= 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def bubble_fraction(stages, microbatches):
    """Idle share of a forward-only pipeline: (p - 1) / (m + p - 1)."""
    _integer("stages", stages, 1)
    _integer("microbatches", microbatches, 1)
    return (stages - 1) / (microbatches + stages - 1)


def pipeline_ms(stages, microbatches, stage_ms, *, p2p_ms=0.0):
    """Time for m microbatches through p stages, each stage_ms per microbatch, p2p_ms per hand-off."""
    _integer("stages", stages, 1)
    _integer("microbatches", microbatches, 1)
    _positive("stage_ms", stage_ms)
    _non_negative("p2p_ms", p2p_ms)
    return (microbatches + stages - 1) * stage_ms + (stages - 1) * p2p_ms


def min_microbatches(stages, max_bubble):
    """The fewest microbatches whose bubble_fraction is <= max_bubble."""
    _integer("stages", stages, 1)
    _number("max_bubble", max_bubble)
    if not 0 < max_bubble <= 1:
        raise ValueError(f"max_bubble must be in (0, 1], got {max_bubble!r}")
    # the closed form, then one step either way: float rounding can put it off by one
    m = max(1, math.ceil((stages - 1) * (1 - max_bubble) / max_bubble))
    if m > 1 and bubble_fraction(stages, m - 1) <= max_bubble:
        return m - 1
    if bubble_fraction(stages, m) > max_bubble:
        return m + 1
    return m


def pp_decode(stages, groups, stage_ms):
    """Decode with pipeline parallelism: ``groups`` batches take turns through ``stages`` stages."""
    _integer("stages", stages, 1)
    _integer("groups", groups, 1)
    _positive("stage_ms", stage_ms)
    tpot_ms = max(groups, stages) * stage_ms
    return {"tpot_ms": float(tpot_ms), "utilization": min(groups, stages) / stages,
            "group_steps_per_s": groups / tpot_ms * 1e3}
