"""A step-level simulator of one LLM serving instance.

    from sim import Setup, simulate, summarize
    from sim import plan                  # plan.plan(qps, setup, ...) -> plan.Plan
    from sim import run, workload, lengths   # run(setup, workload.poisson(...))
"""

from sim.metrics import percentile, summarize
from sim.result import Request, SimResult, StepLog
from sim.setup import Setup
from sim.simulate import poisson_arrivals, simulate
from sim import lengths, plan, presets, workload  # modules: sim.plan.plan, sim.presets.instance, ...
from sim.workload import run

__all__ = ["Setup", "simulate", "summarize", "percentile", "poisson_arrivals",
           "Request", "SimResult", "StepLog", "run", "plan", "presets", "workload", "lengths"]
