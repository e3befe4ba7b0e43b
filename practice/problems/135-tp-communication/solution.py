"""Reference solution for 135: tensor-parallel communication."""
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


def allreduce_us(message_bytes, *, alpha_us, beta_gbs):
    """One all-reduce of message_bytes: alpha_us + message_bytes / (beta_gbs * 1e9) s, in us."""
    _non_negative("message_bytes", message_bytes)
    _non_negative("alpha_us", alpha_us)
    _positive("beta_gbs", beta_gbs)
    return alpha_us + message_bytes / (beta_gbs * 1e9) * 1e6


def tp_comm_ms(tokens, *, layers, hidden, tp, alpha_us, beta_gbs, activation_bytes=2):
    """Milliseconds of all-reduces in one step: 2 per layer, each of tokens x hidden activations."""
    _integer("tokens", tokens, 1)
    _integer("layers", layers, 1)
    _integer("hidden", hidden, 1)
    _integer("tp", tp, 1)
    _positive("activation_bytes", activation_bytes)
    one = allreduce_us(tokens * hidden * activation_bytes, alpha_us=alpha_us, beta_gbs=beta_gbs)
    if tp == 1:
        return 0.0
    return 2 * layers * one / 1e3


def best_tp(tokens, *, weight_bytes, layers, hidden, gpu_bandwidth_gbs, gpu_memory_gb, measured,
            activation_bytes=2):
    """The tp (1 or one of ``measured``) with the shortest memory-bound decode step."""
    _integer("tokens", tokens, 1)
    _positive("weight_bytes", weight_bytes)
    _integer("layers", layers, 1)
    _integer("hidden", hidden, 1)
    _positive("gpu_bandwidth_gbs", gpu_bandwidth_gbs)
    _positive("gpu_memory_gb", gpu_memory_gb)
    _positive("activation_bytes", activation_bytes)
    if not isinstance(measured, (list, tuple)):
        raise ValueError(f"measured must be a list of [tp, alpha_us, beta_gbs], got {measured!r}")
    candidates = [(1, 0.0, 1.0)]
    seen = set()
    for entry in measured:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ValueError(f"measured: each entry must be [tp, alpha_us, beta_gbs], got {entry!r}")
        tp, alpha, beta = entry
        _integer("tp", tp, 2)
        _non_negative("alpha_us", alpha)
        _positive("beta_gbs", beta)
        if tp in seen:
            raise ValueError(f"measured: tp {tp} is listed twice")
        seen.add(tp)
        candidates.append((tp, alpha, beta))
    best = None
    for tp, alpha, beta in sorted(candidates):
        if weight_bytes / tp > gpu_memory_gb * 1e9:
            continue
        read_ms = weight_bytes / (tp * gpu_bandwidth_gbs * 1e9) * 1e3
        comm_ms = tp_comm_ms(tokens, layers=layers, hidden=hidden, tp=tp, alpha_us=alpha, beta_gbs=beta,
                             activation_bytes=activation_bytes)
        step_ms = read_ms + comm_ms
        if best is None or step_ms < best["step_ms"]:
            best = {"tp": tp, "step_ms": step_ms, "read_ms": read_ms, "comm_ms": comm_ms}
    if best is None:
        raise ValueError(f"gpu_memory_gb: {weight_bytes / 1e9:.1f} GB of weights fit at none of the tp "
                         f"values on {gpu_memory_gb} GB GPUs")
    return best
