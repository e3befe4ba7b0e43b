"""What a fleet is made of: pools of identical instances, a router, a KV link between pools, and
optional failures and autoscaling. Every field is checked when the object is built: a bad value
raises ``ValueError`` naming the field and the allowed range. Everything is off by default."""

from __future__ import annotations

from dataclasses import dataclass

from sim.fleet.autoscale import Autoscaler
from sim.fleet.routers import ROUTERS, Router
from sim.setup import Setup
from sim.validate import check_int, check_number


@dataclass(frozen=True)
class Pool:
    """``instances`` identical instances of ``setup``, each on ``gpus_per_instance`` GPUs."""

    setup: Setup
    instances: int
    gpus_per_instance: int = 1

    def __post_init__(self):
        if not isinstance(self.setup, Setup):
            raise ValueError(f"Pool.setup must be a sim.Setup, got {type(self.setup).__name__}")
        check_int("Pool.instances", self.instances, 1)
        check_int("Pool.gpus_per_instance", self.gpus_per_instance, 1)


@dataclass(frozen=True)
class Link:
    """The network that carries a prompt's KV from a prefill to a decode instance.

    time = input_len x kv_bytes_per_token / (gbs x 1e9) + latency_s. The default, 50 GB/s, is one
    400 Gb/s NIC (InfiniBand NDR or RoCE, ConnectX-7 class) with GPUDirect RDMA; an 8-GPU node with
    one such NIC per GPU moves the TP shards in parallel, up to 8 x that. latency_s covers the
    handshake and the first byte (RDMA setup, around a millisecond in Mooncake/NIXL-style engines).
    """

    gbs: float = 50.0
    latency_s: float = 1e-3

    def __post_init__(self):
        check_number("link_gbs", self.gbs, 0, note="(GB/s, 1e9 bytes per second)")
        check_number("link_latency_s", self.latency_s, 0, strict=False, note="(seconds)")

    def transfer_s(self, tokens: int, kv_bytes_per_token: float) -> float:
        return tokens * kv_bytes_per_token / (self.gbs * 1e9) + self.latency_s


@dataclass(frozen=True)
class Failures:
    """Instance failures: at given ``(time_s, instance_id)`` pairs, and/or one exponential draw of
    mean ``mtbf_s`` per starting instance (``random.Random(seed)``, in id order; draws past the last
    arrival do not happen). A failed instance stops at once; the gateway notices ``detect_s`` later
    (its health check), then retries every request it lost on another instance, at most ``retries``
    times per request (0: lost requests are recorded as failed, reason "instance_failed")."""

    at: tuple = ()
    mtbf_s: float | None = None
    seed: int = 0
    detect_s: float = 5.0
    retries: int = 1

    def __post_init__(self):
        object.__setattr__(self, "at", tuple(tuple(x) for x in self.at))
        for item in self.at:
            if len(item) != 2:
                raise ValueError(f"failures.at must hold (time_s, instance_id) pairs, got {item!r}")
            check_number("failures.at time_s", item[0], 0, strict=False, note="(seconds)")
            check_int("failures.at instance_id", item[1], 0)
        if self.mtbf_s is not None:
            check_number("failures.mtbf_s", self.mtbf_s, 0, note="(seconds)")
        check_int("failures.seed", self.seed, None)
        check_number("failures.detect_s", self.detect_s, 0, strict=False, note="(seconds)")
        check_int("failures.retries", self.retries, 0)


@dataclass(frozen=True)
class Fleet:
    """A fleet: either colocated pools (chunked prefill on every instance) or a prefill pool and a
    decode pool joined by a ``link`` (PD disaggregation). Build one with ``Fleet.of`` or
    ``Fleet.pd``. Instance ids run over the pools in order (prefill first; ``colocated`` first).

    ``pools``: more colocated pools, by name (``{"long": Pool(setup, 2)}``), for a router whose
    ``select_pool`` sends some requests there (``by_length``: prompts above 32K to "long"); the main
    pool is named "colocated". Every other router sends everything to the main pool."""

    colocated: Pool | None = None
    pools: tuple = ()                # ((name, Pool), ...): more colocated pools (a dict is accepted)
    prefill: Pool | None = None
    decode: Pool | None = None
    router: object = "round_robin"
    link: Link | None = None
    failures: Failures | None = None
    autoscaler: Autoscaler | None = None
    gpu_hour_usd: float = 2.5
    seed: int = 0
    log_routes: bool = True          # one event per routing decision in the event log

    def __post_init__(self):
        if self.colocated is not None:
            if self.prefill is not None or self.decode is not None:
                raise ValueError("a fleet is colocated (pool) or disaggregated (prefill and decode), not both")
        elif self.prefill is None or self.decode is None:
            raise ValueError("pool is empty: give a colocated pool, or both a prefill and a decode pool")
        for name in ("colocated", "prefill", "decode"):
            pool = getattr(self, name)
            if pool is not None and not isinstance(pool, Pool):
                raise ValueError(f"{name} must be a sim.fleet.Pool, got {type(pool).__name__}")
        self._check_pools()
        if self.disaggregated:
            if self.link is None:
                object.__setattr__(self, "link", Link())
            if self.autoscaler is not None:
                raise ValueError("autoscaler: only colocated fleets autoscale for now")
        if not (isinstance(self.router, Router) or (isinstance(self.router, str) and self.router in ROUTERS)):
            raise ValueError(f"router must be one of {sorted(ROUTERS)} or a sim.fleet.Router, got {self.router!r}")
        check_number("gpu_hour_usd", self.gpu_hour_usd, 0, strict=False)
        check_int("seed", self.seed, None)
        if self.failures is not None:
            if not isinstance(self.failures, Failures):
                raise ValueError(f"failures must be a sim.fleet.Failures, got {type(self.failures).__name__}")
            for _, i in self.failures.at:
                if i >= self.instances:
                    raise ValueError(f"failures.at: instance {i} does not exist (instance ids are 0.."
                                     f"{self.instances - 1})")
        if self.autoscaler is not None:
            if not isinstance(self.autoscaler, Autoscaler):
                raise ValueError(f"autoscaler must be a sim.fleet.Autoscaler, got {type(self.autoscaler).__name__}")
            a = self.autoscaler
            if not a.min_instances <= self.colocated.instances <= a.max_instances:
                raise ValueError(f"pool instances ({self.colocated.instances}) must be within the autoscaler's "
                                 f"[min_instances, max_instances] = [{a.min_instances}, {a.max_instances}]")

    def _check_pools(self) -> None:
        pools = self.pools
        if isinstance(pools, dict):
            pools = tuple(pools.items())
        object.__setattr__(self, "pools", tuple(tuple(item) for item in pools))
        if self.pools and self.colocated is None:
            raise ValueError("pools: extra pools are colocated pools; a PD fleet has its prefill and decode pools")
        seen = {"colocated", "prefill", "decode"}
        for item in self.pools:
            if len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], Pool):
                raise ValueError(f"pools must map names to sim.fleet.Pool objects, got {item!r}")
            if item[0] in seen:
                raise ValueError(f"pools: the name {item[0]!r} is taken (pool names must be unique and not "
                                 f"'colocated', 'prefill' or 'decode')")
            seen.add(item[0])
        if self.pools and self.autoscaler is not None:
            raise ValueError("autoscaler: only a fleet of one colocated pool autoscales for now")

    @property
    def disaggregated(self) -> bool:
        return self.colocated is None

    @property
    def pool_items(self) -> tuple:
        """((name, Pool), ...) in instance-id order."""
        if self.colocated is None:
            return (("prefill", self.prefill), ("decode", self.decode))
        return (("colocated", self.colocated),) + self.pools

    @property
    def pool_names(self) -> tuple:
        return tuple(name for name, _ in self.pool_items)

    @property
    def instances(self) -> int:
        """Instances at the start."""
        return sum(p.instances for _, p in self.pool_items)

    @property
    def gpus(self) -> int:
        """GPUs at the start."""
        return sum(p.instances * p.gpus_per_instance for _, p in self.pool_items)

    @classmethod
    def of(cls, setup: Setup, instances: int, *, router="round_robin", gpus_per_instance: int = 1,
           **options) -> "Fleet":
        """A colocated fleet: ``instances`` copies of ``setup`` behind ``router``."""
        return cls(colocated=Pool(setup, instances, gpus_per_instance), router=router, **options)

    @classmethod
    def pd(cls, prefill_setup: Setup, prefill_instances: int, decode_setup: Setup, decode_instances: int,
           *, router="round_robin", link_gbs: float = 50.0, link_latency_s: float = 1e-3,
           gpus_per_instance: int = 1, **options) -> "Fleet":
        """A disaggregated fleet: a prefill pool and a decode pool, joined by a KV link."""
        return cls(prefill=Pool(prefill_setup, prefill_instances, gpus_per_instance),
                   decode=Pool(decode_setup, decode_instances, gpus_per_instance),
                   router=router, link=Link(link_gbs, link_latency_s), **options)
