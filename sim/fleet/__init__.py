"""A fleet of serving instances: routers, PD disaggregation, autoscaling and failures.

    from sim.fleet import Fleet, Pool, run_fleet, summarize_fleet
    fleet = Fleet.of(setup, 16, router="least_requests")            # colocated (chunked prefill)
    pd = Fleet.pd(setup, 6, setup, 10, router="least_requests")      # prefill pool + decode pool
    result = run_fleet(fleet, sim.workload.poisson(200, 12000, 2000, 500))
    summarize_fleet(result, ttft_slo=2.0, tpot_slo=0.05)

    long = Fleet.of(setup, 12, router="by_length", pools={"long": Pool(long_setup, 2)})  # > 32K: "long"

Modules: ``spec`` (Fleet, Pool, Link, Failures), ``routers`` (the registry), ``clock`` (run_fleet:
the event loop, one handler per event kind), ``events`` (the queue), ``delivery`` (routing and
sending, PD and colocated), ``transfer`` (PD's prefill steps and KV link), ``failures``,
``scaling`` (the autoscaler at run time; its policies in ``autoscale``), ``state``, ``worker``
(instances advanced when read), ``fast`` (the compiled fleet: one loop for a colocated pool
behind round_robin, random, least_requests, least_kv or power_of_two), ``assemble`` and ``result``, ``metrics``, ``load`` (time-varying
and day-shaped workloads), ``sizing`` (the cheapest fleet for a load and SLOs).
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
