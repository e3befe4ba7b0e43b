"""Autoscaling: a policy evaluated every ``interval_s`` sets the number of instances, new instances
start cold (their weights must be loaded first), and scale-down drains before removing.

Cold start = weight_bytes / bandwidth of the weight source + ``init_s`` (engine start, compilation,
CUDA-graph capture; 0 by default, the chapter says a 70B model's whole cold start takes minutes).
The sources' bandwidths, per instance:

    local_nvme       7 GB/s    one PCIe 4.0 x4 NVMe SSD, sequential read (Samsung 990 PRO: 7.45 GB/s;
                               Gen5 drives reach ~14 GB/s)
    network_storage  1.25 GB/s a 10 Gb/s share of a network file system or object store (S3/NFS/
                               Lustre clients typically see 1-3 GB/s per node)
    peer_gpu         50 GB/s   another instance's GPUs over one 400 Gb/s NIC with GPUDirect RDMA
                               (ConnectX-7 / InfiniBand NDR)

The chapter's 70B FP8 instance (70.6 GB) therefore starts in about 10 s from NVMe, 56 s from network
storage and 1.4 s from a peer, plus ``init_s``. Policies are small classes in ``AUTOSCALERS``:
``desired(signal)`` returns how many instances the pool should have (before the min/max clamp).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from sim.validate import check_int, check_number

WEIGHT_SOURCES_GBS = {"local_nvme": 7.0, "network_storage": 1.25, "peer_gpu": 50.0}


class Signal:
    """What the autoscaler reads at a tick: instances up and starting, outstanding requests over
    the routable instances, and the oldest waiting request's age per up instance (seconds)."""

    def __init__(self, now, up, starting, outstanding, queue_ages):
        self.now, self.up, self.starting = now, up, starting
        self.outstanding, self.queue_ages = outstanding, queue_ages


class TargetOutstanding:
    """Keep ``target`` outstanding requests per instance: desired = ceil(outstanding / target)
    (Knative's concurrency target; KServe scales LLM servers this way)."""

    name = "outstanding"

    def __init__(self, target: float):
        check_number("autoscaler.target", target, 0, note="(outstanding requests per instance)")
        self.target = target

    def desired(self, s: Signal) -> int:
        return math.ceil(s.outstanding / self.target)


class TargetQueueTime:
    """Keep the mean age of the oldest waiting request per instance under ``target`` seconds: add
    one instance at a tick where it is above; remove one after two ticks in a row where nothing
    waits anywhere (a queue that empties once is not yet spare capacity)."""

    name = "queue_time"

    def __init__(self, target: float):
        check_number("autoscaler.target", target, 0, note="(seconds of queueing)")
        self.target = target
        self.calm = 0

    def desired(self, s: Signal) -> int:
        current = s.up + s.starting
        mean_age = sum(s.queue_ages) / len(s.queue_ages) if s.queue_ages else 0.0
        self.calm = self.calm + 1 if mean_age == 0.0 else 0
        if mean_age > self.target:
            return current + 1
        if self.calm >= 2:
            self.calm = 0
            return current - 1
        return current


AUTOSCALERS = {cls.name: cls for cls in (TargetOutstanding, TargetQueueTime)}


@dataclass(frozen=True)
class Autoscaler:
    """Scale a colocated pool between ``min_instances`` and ``max_instances``, every ``interval_s``,
    with ``policy`` (a name in ``AUTOSCALERS`` or an object with ``desired(signal)``) at ``target``.
    New instances are ready ``cold_start_s`` after the decision (weights from ``weight_source``)."""

    policy: object = "outstanding"
    target: float = 32.0
    interval_s: float = 30.0
    min_instances: int = 1
    max_instances: int = 64
    weight_source: str = "local_nvme"
    init_s: float = 0.0

    def __post_init__(self):
        if isinstance(self.policy, str) and self.policy not in AUTOSCALERS:
            raise ValueError(f"autoscaler.policy must be one of {sorted(AUTOSCALERS)} or an object with "
                             f"desired(signal), got {self.policy!r}")
        if not isinstance(self.policy, str) and not hasattr(self.policy, "desired"):
            raise ValueError(f"autoscaler.policy must have a desired(signal) method, got {self.policy!r}")
        check_number("autoscaler.interval_s", self.interval_s, 0, note="(seconds)")
        check_int("autoscaler.min_instances", self.min_instances, 1)
        check_int("autoscaler.max_instances", self.max_instances, self.min_instances)
        if self.weight_source not in WEIGHT_SOURCES_GBS:
            raise ValueError(f"autoscaler.weight_source must be one of {sorted(WEIGHT_SOURCES_GBS)}, "
                             f"got {self.weight_source!r}")
        check_number("autoscaler.init_s", self.init_s, 0, strict=False, note="(seconds)")
        self.make_policy()          # checks target

    def make_policy(self):
        """A fresh policy for one run: a policy object given by the caller is copied, so state it
        keeps (a counter, a moving average) never carries over from one run to the next."""
        if isinstance(self.policy, str):
            return AUTOSCALERS[self.policy](self.target)
        return copy.deepcopy(self.policy)

    def cold_start_s(self, weight_bytes: float) -> float:
        return cold_start_s(weight_bytes, self.weight_source, self.init_s)


def cold_start_s(weight_bytes: float, source: str = "local_nvme", init_s: float = 0.0) -> float:
    """Seconds before a new instance serves: its weights read from ``source``, plus ``init_s``."""
    if source not in WEIGHT_SOURCES_GBS:
        raise ValueError(f"weight source must be one of {sorted(WEIGHT_SOURCES_GBS)}, got {source!r}")
    return weight_bytes / (WEIGHT_SOURCES_GBS[source] * 1e9) + init_s
