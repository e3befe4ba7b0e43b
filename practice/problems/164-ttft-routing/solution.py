"""Reference solution for 164: a gateway that routes by predicted TTFT and rejects past the SLO."""
import math
import numbers

KEYS = {"queued_tokens", "step_left_s", "s_per_token"}


def _real(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Real) and math.isfinite(x)


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _instances(instances):
    if not isinstance(instances, list) or len(instances) == 0:
        raise ValueError("instances must be a non-empty list")
    for inst in instances:
        if not isinstance(inst, dict) or set(inst) != KEYS or not _whole(inst["queued_tokens"]) \
                or inst["queued_tokens"] < 0 or not _real(inst["step_left_s"]) or inst["step_left_s"] < 0 \
                or not _real(inst["s_per_token"]) or inst["s_per_token"] <= 0:
            raise ValueError(f"instances: each is {{queued_tokens: integer >= 0, step_left_s: >= 0, "
                             f"s_per_token: > 0}}, got {inst!r}")


def _slo(ttft_slo_s):
    if not _real(ttft_slo_s) or ttft_slo_s <= 0:
        raise ValueError(f"ttft_slo_s must be a finite number > 0, got {ttft_slo_s!r}")


def _pick(predictions, ttft_slo_s):
    """The lowest index among the smallest predictions, or -1 when even that exceeds the SLO."""
    best = 0
    for i in range(1, len(predictions)):
        if predictions[i] < predictions[best]:
            best = i
    return (best if predictions[best] <= ttft_slo_s else -1), predictions[best]


def route(input_len, instances, ttft_slo_s):
    """One request: predicted TTFT on each instance is step_left_s + (queued_tokens + input_len) x
    s_per_token; route to the smallest (lowest index on ties), or -1 when it exceeds the SLO."""
    if not _whole(input_len) or input_len < 1:
        raise ValueError(f"input_len must be an integer >= 1, got {input_len!r}")
    _instances(instances)
    _slo(ttft_slo_s)
    predictions = [inst["step_left_s"] + (inst["queued_tokens"] + input_len) * inst["s_per_token"]
                   for inst in instances]
    chosen, ttft = _pick(predictions, ttft_slo_s)
    return {"instance": chosen, "ttft_s": ttft}


def route_stream(requests, instances, ttft_slo_s):
    """Requests in arrival order; each instance's prefill backlog ends at busy_until (from its state
    at time 0) and grows by input_len x s_per_token for every request routed to it."""
    _instances(instances)
    _slo(ttft_slo_s)
    if not isinstance(requests, list):
        raise ValueError("requests must be a list")
    last = 0
    for r in requests:
        if not isinstance(r, dict) or set(r) != {"arrival_s", "input_len"} or not _real(r["arrival_s"]) \
                or r["arrival_s"] < last or not _whole(r["input_len"]) or r["input_len"] < 1:
            raise ValueError(f"requests: each is {{arrival_s: >= 0 and nondecreasing, input_len: integer >= 1}}, "
                             f"got {r!r}")
        last = r["arrival_s"]
    busy = [inst["step_left_s"] + inst["queued_tokens"] * inst["s_per_token"] for inst in instances]
    chosen, ttfts = [], []
    for r in requests:
        t, n = r["arrival_s"], r["input_len"]
        predictions = [max(b - t, 0) + n * inst["s_per_token"] for b, inst in zip(busy, instances)]
        i, ttft = _pick(predictions, ttft_slo_s)
        if i >= 0:
            busy[i] = max(busy[i], t) + n * instances[i]["s_per_token"]
        chosen.append(i)
        ttfts.append(ttft)
    return {"instance": chosen, "ttft_s": ttfts, "rejected": chosen.count(-1)}
