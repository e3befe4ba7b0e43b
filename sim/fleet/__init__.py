"""A fleet of serving instances: routers, PD disaggregation, autoscaling and failures.

    from sim.fleet import Fleet, run_fleet, summarize_fleet
    fleet = Fleet.of(setup, 16, router="least_requests")            # colocated (chunked prefill)
    pd = Fleet.pd(setup, 6, setup, 10, router="least_requests")      # prefill pool + decode pool
    result = run_fleet(fleet, sim.workload.poisson(200, 12000, 2000, 500))
    summarize_fleet(result, ttft_slo=2.0, tpot_slo=0.05)

Modules: ``spec`` (Fleet, Pool, Link, Failures), ``routers``, ``autoscale``, ``clock`` (the event
loop), ``worker``, ``result``, ``metrics``, ``load`` (time-varying workloads), ``sizing`` (the
cheapest fleet for a load and SLOs).
"""

from sim.fleet.autoscale import AUTOSCALERS, WEIGHT_SOURCES_GBS, Autoscaler, cold_start_s
from sim.fleet.clock import run_fleet
from sim.fleet.metrics import slo_by_window, summarize_fleet
from sim.fleet.result import FleetResult, WorkerRecord
from sim.fleet.routers import ROUTERS, FleetRequest, PoolRule, Router, RuleRouter
from sim.fleet.spec import Failures, Fleet, Link, Pool

__all__ = ["Fleet", "Pool", "Link", "Failures", "Autoscaler", "run_fleet", "summarize_fleet",
           "slo_by_window", "FleetResult", "WorkerRecord", "Router", "RuleRouter", "PoolRule", "FleetRequest", "ROUTERS",
           "AUTOSCALERS", "WEIGHT_SOURCES_GBS", "cold_start_s"]
