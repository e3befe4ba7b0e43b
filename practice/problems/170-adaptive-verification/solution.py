"""Reference solution for 170: adaptive speculative decoding: the step time of a speculative batch
(the course simulator's rule), the draft length with the most throughput at this load (0 = off),
and an online estimate of the acceptance rate."""
import math
import numbers

SETUP_KEYS = ("params", "weight_bytes", "kv_bytes_per_token", "peak_flops", "bandwidth", "mfu", "step_overhead")


def _real(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _setup(setup):
    ok = isinstance(setup, dict) and set(setup) == set(SETUP_KEYS) and all(_real(setup[k]) for k in SETUP_KEYS)
    if ok:
        s = setup
        ok = s["params"] > 0 and s["weight_bytes"] > 0 and s["kv_bytes_per_token"] >= 0 and s["peak_flops"] > 0 \
            and s["bandwidth"] > 0 and 0 < s["mfu"] <= 1 and s["step_overhead"] >= 0
    if not ok:
        raise ValueError(f"setup must be a dict with exactly the keys {SETUP_KEYS} (positive finite numbers; "
                         f"kv_bytes_per_token, step_overhead >= 0; mfu in (0, 1]), got {setup!r}")


def _int(name, x, minimum):
    if not _whole(x) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _cost(draft_cost):
    if not _real(draft_cost) or draft_cost < 0:
        raise ValueError(f"draft_cost must be a finite number >= 0, got {draft_cost!r}")


def _alpha(alpha):
    if not _real(alpha) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")


def _step(s, tokens, context):
    compute = 2 * s["params"] * tokens / (s["peak_flops"] * s["mfu"])
    memory = (s["weight_bytes"] + s["kv_bytes_per_token"] * context) / s["bandwidth"]
    return max(compute, memory) + s["step_overhead"]


def _spec_step(s, batch, context, k, draft_cost):
    return _step(s, batch * (k + 1), context) + k * draft_cost * _step(s, batch, context)


def spec_step_s(setup, batch, context, k, draft_cost):
    """One decode step of `batch` requests over `context` cached tokens, each verifying k drafts: the
    target computes batch x (k + 1) tokens, and k draft passes cost draft_cost of a plain step each."""
    _setup(setup)
    _int("batch", batch, 1)
    _int("context", context, 0)
    _int("k", k, 0)
    _cost(draft_cost)
    return _spec_step(setup, batch, context, k, draft_cost)


def best_k(setup, batch, context, alpha, draft_cost, k_max):
    """The draft length in 0..k_max with the most tokens per second (the smallest on ties)."""
    _setup(setup)
    _int("batch", batch, 1)
    _int("context", context, 0)
    _alpha(alpha)
    _cost(draft_cost)
    _int("k_max", k_max, 0)
    rates = []
    for k in range(k_max + 1):
        tokens = sum(alpha ** i for i in range(k + 1))
        rates.append(batch * tokens / _spec_step(setup, batch, context, k, draft_cost))
    best = 0
    for k in range(1, len(rates)):
        if rates[k] > rates[best]:
            best = k
    return {"k": best, "tokens_per_s": rates[best], "speedup": rates[best] / rates[0]}


def estimate_alpha(observations, prior_alpha, prior_weight, decay):
    """Acceptance rate after each step from decayed counts of accepted drafts and rejections,
    starting from prior_weight pseudo-drafts at prior_alpha; steps with k = 0 teach nothing."""
    if not isinstance(observations, list) or any(
            not isinstance(o, list) or len(o) != 2 or not all(_whole(x) for x in o) or not 0 <= o[1] <= o[0]
            for o in observations):
        raise ValueError(f"observations must be a list of [k, accepted] pairs of integers with "
                         f"0 <= accepted <= k, got {observations!r}")
    _alpha_prior = prior_alpha
    if not _real(_alpha_prior) or not 0 <= _alpha_prior <= 1:
        raise ValueError(f"prior_alpha must be a number in [0, 1], got {prior_alpha!r}")
    if not _real(prior_weight) or prior_weight <= 0:
        raise ValueError(f"prior_weight must be a finite number > 0, got {prior_weight!r}")
    if not _real(decay) or not 0 < decay <= 1:
        raise ValueError(f"decay must be a number in (0, 1], got {decay!r}")
    accepted, rejected = prior_weight * prior_alpha, prior_weight * (1 - prior_alpha)
    out = []
    for k, a in observations:
        if k > 0:
            accepted = decay * accepted + a
            rejected = decay * rejected + (1 if a < k else 0)
        out.append(accepted / (accepted + rejected))
    return out
