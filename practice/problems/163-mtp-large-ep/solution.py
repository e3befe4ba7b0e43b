"""Reference solution for 163: estimating multi-token prediction (MTP) as speculative decoding in a
large-EP decode deployment, where a step costs a fixed part plus a part per token on each GPU."""
import math
import numbers


def _int(name, x, minimum):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _real(name, x, low, strict):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) \
            or (x <= low if strict else x < low):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low}, got {x!r}")


def _costs(fixed_s, per_token_s, mtp_layer_frac):
    _real("fixed_s", fixed_s, 0, False)
    _real("per_token_s", per_token_s, 0, True)
    _real("mtp_layer_frac", mtp_layer_frac, 0, False)


def _alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")


def _step(batch, depth, fixed_s, per_token_s, mtp_layer_frac):
    tokens = batch * (1 + depth)
    main = fixed_s + per_token_s * tokens
    return main + depth * mtp_layer_frac * main


def _tokens(depth, alpha):
    return sum(alpha ** i for i in range(depth + 1))


def mtp_step_s(batch, depth, fixed_s, per_token_s, mtp_layer_frac):
    """The main model verifies batch x (1 + depth) tokens (fixed_s + per_token_s per token); each of
    the depth MTP modules costs mtp_layer_frac of that."""
    _int("batch", batch, 1)
    _int("depth", depth, 0)
    _costs(fixed_s, per_token_s, mtp_layer_frac)
    return _step(batch, depth, fixed_s, per_token_s, mtp_layer_frac)


def mtp_rate(batch, depth, alpha, fixed_s, per_token_s, mtp_layer_frac):
    """TPOT (step / tokens per step) and tokens per second per GPU."""
    _int("batch", batch, 1)
    _int("depth", depth, 0)
    _alpha(alpha)
    _costs(fixed_s, per_token_s, mtp_layer_frac)
    step, e = _step(batch, depth, fixed_s, per_token_s, mtp_layer_frac), _tokens(depth, alpha)
    return {"tpot_s": step / e, "tokens_per_s": batch * e / step}


def best_batch(tpot_slo_s, depth, alpha, fixed_s, per_token_s, mtp_layer_frac, max_batch):
    """The largest batch in 1..max_batch whose TPOT is within the SLO (0 when none is)."""
    _real("tpot_slo_s", tpot_slo_s, 0, True)
    _int("depth", depth, 0)
    _alpha(alpha)
    _costs(fixed_s, per_token_s, mtp_layer_frac)
    _int("max_batch", max_batch, 1)
    e = _tokens(depth, alpha)
    best = 0
    for b in range(1, max_batch + 1):
        if _step(b, depth, fixed_s, per_token_s, mtp_layer_frac) / e <= tpot_slo_s:
            best = b
    rate = best * e / _step(best, depth, fixed_s, per_token_s, mtp_layer_frac) if best else 0.0
    return {"batch": best, "tokens_per_s": rate}
