"""Reference solution for 182: estimating an LLM on a phone or laptop: does it fit in memory, how
fast it decodes (memory-bound) and how long the prompt takes (compute-bound)."""
import math
import numbers


def _real(name, x, strict):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or (x <= 0 if strict else x < 0):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} 0, got {x!r}")


def _int(name, x, minimum):
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")


def _fraction(name, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0 < x <= 1:
        raise ValueError(f"{name} must be a number in (0, 1], got {x!r}")


def memory_plan(params, weight_bits, context, kv_bytes_per_token, ram_gb, reserved_gb):
    """Weights (params x bits / 8) and the KV of one sequence of `context` tokens, against the RAM the
    OS and other apps leave (ram - reserved); GB are 1e9 bytes."""
    _real("params", params, True)
    _real("weight_bits", weight_bits, True)
    _int("context", context, 0)
    _real("kv_bytes_per_token", kv_bytes_per_token, False)
    _real("ram_gb", ram_gb, True)
    _real("reserved_gb", reserved_gb, False)
    model = params * weight_bits / 8 / 1e9
    kv = kv_bytes_per_token * context / 1e9
    free = ram_gb - reserved_gb - model - kv
    return {"model_gb": model, "kv_gb": kv, "free_gb": free, "fits": free >= 0}


def decode_tokens_per_s(params, weight_bits, context, kv_bytes_per_token, bandwidth_gbs, efficiency):
    """Each token reads all the weights and the KV once: efficiency x bandwidth / bytes per token."""
    _real("params", params, True)
    _real("weight_bits", weight_bits, True)
    _int("context", context, 0)
    _real("kv_bytes_per_token", kv_bytes_per_token, False)
    _real("bandwidth_gbs", bandwidth_gbs, True)
    _fraction("efficiency", efficiency)
    per_token = params * weight_bits / 8 + kv_bytes_per_token * context
    return efficiency * bandwidth_gbs * 1e9 / per_token


def prefill_s(prompt_tokens, params, tops, utilization):
    """2 x params FLOPs (or integer ops) per prompt token at utilization x tops x 1e12 per second."""
    _int("prompt_tokens", prompt_tokens, 1)
    _real("params", params, True)
    _real("tops", tops, True)
    _fraction("utilization", utilization)
    return prompt_tokens * 2 * params / (tops * 1e12 * utilization)
