"""Chapter 02, section 5: turning an availability target into spare instances.

The service needs ``needed`` instances up to carry its peak within the SLOs. Each instance is up a
fraction ``availability`` of the time (hardware faults, driver / NCCL hangs, restarts and the
minutes a 70B instance takes to load again), independently of the others. With ``needed + spares``
instances deployed, the peak is served whenever at least ``needed`` of them are up, which happens
with the binomial probability ``capacity_availability``; ``spares_for`` is the fewest spares that
keep it at or above the target (99.9%: capacity short at most 43 minutes a month).

Independence is the assumption to question: instances that share a rack switch, a power feed or a
rollout fail together, and no number of spares in the same failure domain covers that; spread them
across domains (or regions) first, then count spares with this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.validate import check_int

MAX_SPARES = 10_000          # the search gives up beyond this (an availability near 0 never gets there)


def _check_fraction(name: str, value, *, closed_high: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (0 < value < 1 or (closed_high and value == 1)):
        interval = "(0, 1]" if closed_high else "(0, 1)"
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")


def capacity_availability(deployed: int, needed: int, availability: float) -> float:
    """Probability that at least ``needed`` of ``deployed`` independent instances are up, each with
    probability ``availability``: sum over k >= needed of C(deployed, k) a^k (1 - a)^(deployed - k)."""
    check_int("needed", needed, 1)
    check_int("deployed", deployed, 0)
    _check_fraction("availability", availability, closed_high=True)
    if deployed < needed:
        return 0.0
    if availability == 1:
        return 1.0
    # The shortfall (fewer than `needed` up) summed term by term, each in logs so that large fleets
    # neither overflow C(n, k) nor underflow a^k.
    log_up, log_down = math.log(availability), math.log1p(-availability)
    short = sum(math.exp(math.lgamma(deployed + 1) - math.lgamma(k + 1) - math.lgamma(deployed - k + 1)
                         + k * log_up + (deployed - k) * log_down) for k in range(needed))
    return max(0.0, 1.0 - short)


def spares_for(needed: int, availability: float, target: float = 0.999) -> int:
    """The fewest spare instances beyond ``needed`` that keep capacity up with probability >= ``target``."""
    check_int("needed", needed, 1)
    _check_fraction("availability", availability, closed_high=True)
    _check_fraction("target", target, closed_high=False)
    for spares in range(MAX_SPARES + 1):
        if capacity_availability(needed + spares, needed, availability) >= target:
            return spares
    raise ValueError(f"availability {availability!r} needs more than {MAX_SPARES} spares to reach {target!r}")


@dataclass(frozen=True)
class SpareRow:
    availability: float         # of one instance
    spares: int                 # fewest spares for the target
    capacity_up: float          # probability the needed instances are up, with those spares
    without_spares: float       # ... with none


def spare_table(needed: int, availabilities=(0.99, 0.995, 0.999), target: float = 0.999) -> list[SpareRow]:
    """One row per instance availability: the spares the target needs and what they buy."""
    rows = []
    for a in availabilities:
        s = spares_for(needed, a, target)
        rows.append(SpareRow(a, s, capacity_availability(needed + s, needed, a),
                             capacity_availability(needed, needed, a)))
    return rows


def format_spare_rows(needed: int, rows: list[SpareRow], target: float = 0.999) -> str:
    lines = [f"{needed} instances needed, capacity target {target:.1%}",
             f"{'one instance up':>15}  {'no spares':>9}  {'spares':>6}  {'with spares':>11}"]
    for r in rows:
        lines.append(f"{r.availability:15.1%}  {r.without_spares:9.2%}  {r.spares:6}  {r.capacity_up:11.3%}")
    return "\n".join(lines)


def minutes_short_per_month(deployed: int, needed: int, availability: float, days: float = 30.0) -> float:
    """Expected minutes a month (``days`` long) with fewer than ``needed`` instances up."""
    return (1.0 - capacity_availability(deployed, needed, availability)) * days * 24 * 60
