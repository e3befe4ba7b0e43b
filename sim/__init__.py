"""A step-level simulator of one LLM serving instance.

    from sim import Setup, simulate, summarize
"""

from sim.metrics import percentile, summarize
from sim.result import Request, SimResult, StepLog
from sim.setup import Setup
from sim.simulate import poisson_arrivals, simulate

__all__ = ["Setup", "simulate", "summarize", "percentile", "poisson_arrivals",
           "Request", "SimResult", "StepLog"]
