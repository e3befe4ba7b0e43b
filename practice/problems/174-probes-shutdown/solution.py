"""Reference solution for 174: a startup probe that must cover the model's load time, and what happens
to requests when a serving pod is shut down (endpoint propagation delay, grace period)."""
import math
import numbers


def _real(name, x, strict):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or (x <= 0 if strict else x < 0):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} 0, got {x!r}")


def startup(load_s, initial_delay_s, period_s, failure_threshold):
    """Probes at initial_delay + k x period (k = 0, 1, ...) succeed once the model is loaded; the pod
    is ready at the first success, or killed at the failure_threshold-th failed probe."""
    _real("load_s", load_s, False)
    _real("initial_delay_s", initial_delay_s, False)
    _real("period_s", period_s, True)
    if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, numbers.Integral) \
            or failure_threshold < 1:
        raise ValueError(f"failure_threshold must be an integer >= 1, got {failure_threshold!r}")
    for k in range(failure_threshold):
        t = initial_delay_s + k * period_s
        if t >= load_s:
            return {"ready_s": float(t), "killed_s": None}
    return {"ready_s": None, "killed_s": float(initial_delay_s + (failure_threshold - 1) * period_s)}


def shutdown(requests, sigterm_s, lb_delay_s, grace_s, accept_after_sigterm):
    """Arrivals before SIGTERM are served; during the load balancer's delay they still come here
    (served if the server keeps accepting, refused otherwise); later ones go elsewhere. At
    SIGTERM + grace the pod is killed: served requests not finished by then are cut."""
    if not isinstance(requests, list) or any(
            not isinstance(r, dict) or set(r) != {"arrival_s", "duration_s"}
            or any(isinstance(r[k], bool) or not isinstance(r[k], numbers.Real) or not math.isfinite(r[k])
                   or r[k] < 0 for k in r) for r in requests):
        raise ValueError(f"requests must be a list of {{arrival_s >= 0, duration_s >= 0}}, got {requests!r}")
    _real("sigterm_s", sigterm_s, False)
    _real("lb_delay_s", lb_delay_s, False)
    _real("grace_s", grace_s, False)
    if not isinstance(accept_after_sigterm, bool):
        raise ValueError(f"accept_after_sigterm must be True or False, got {accept_after_sigterm!r}")
    kill = sigterm_s + grace_s
    counts = {"completed": 0, "cut": 0, "refused": 0, "rerouted": 0}
    for r in requests:
        a = r["arrival_s"]
        if a >= sigterm_s + lb_delay_s:
            counts["rerouted"] += 1
        elif a >= sigterm_s and not accept_after_sigterm:
            counts["refused"] += 1
        elif a + r["duration_s"] <= kill:
            counts["completed"] += 1
        else:
            counts["cut"] += 1
    return counts
