"""A step-level simulator of one LLM serving instance (needs only numpy).

    from sim import Setup, simulate, summarize
    from sim import max_rate, plan          # capacity search; plan(qps, setup, ...) -> Plan
    from sim import run, workload, lengths   # run(setup, workload.poisson(...))
    from sim.kv import Paged, PrefixCache    # Setup(..., kv=Paged(), prefix_cache=PrefixCache())
    from sim.speculative import Speculative  # Setup(..., speculative=Speculative(k=4, alpha=0.7))
"""

from sim.metrics import percentile, summarize
from sim.result import Request, SimResult, StepLog
from sim.setup import Setup
from sim.simulate import poisson_arrivals, simulate
from sim import capacity, kv, lengths, planning, presets, sessions, speculative, trace, workload  # modules
from sim.capacity import BracketError, InfeasibleError, max_rate, meets_slo
from sim.planning import Plan, plan
from sim.workload import run

__all__ = ["Setup", "simulate", "summarize", "percentile", "poisson_arrivals",
           "Request", "SimResult", "StepLog", "run", "max_rate", "meets_slo", "plan", "Plan",
           "BracketError", "InfeasibleError", "capacity", "planning", "presets", "workload", "lengths",
           "kv", "sessions", "speculative", "trace"]
