"""Routers: which instance gets a request, decided from what a gateway sees at the arrival instant.

A router is a small object with one method, ``select_worker(request, workers)``, returning one of
``workers`` (a non-empty list of the pool's routable ``Worker`` views, in id order). A worker shows
what a real gateway can know: ``id``, ``pool``, ``setup``, ``outstanding`` (requests sent to it and
not yet answered), ``queue_len``, ``running`` and ``free_kv_tokens`` (as reported by the instance).
A request shows ``id``, ``arrival``, ``input_len``, ``output_len`` and ``session``.

Three more hooks have defaults:

- ``select_pair(request, prefill_workers, decode_workers)``: for a disaggregated fleet the gateway
  picks both instances at arrival (as sgl-router's PD mode does); the default asks
  ``select_worker`` once per pool.
- ``select_pool(request, pool_names)``: for a colocated fleet of several pools, which pool takes
  the request; it must depend on the request alone (the fleet checks each request's lengths
  against its pool before the run). The default is the first pool ("colocated").
- ``on_request_complete(request, worker)``: called when an instance reports a request finished
  (a cache-aware router updates its view here). With it, every worker of the pool is brought up
  to the decision's instant first, so the router has heard of every finish before it.

Instances are advanced only when a router reads their state (``sim.fleet.worker``): a router that
reads none (``round_robin``, ``random``, ``session_affinity``) costs no instance any extra step
boundary, one that reads two (``power_of_two``) advances two. ``needs_state`` says which kind a
router is (documentation and tests; the fleet does not need it).

Write your own by subclassing ``Router`` and pass the object, or register it:
``ROUTERS["mine"] = Mine``. ``prefix_aware`` asks each worker ``cached_prefix_tokens(request)``
(a gateway's global prefix index would answer the same question). ``by_length`` (a ``RuleRouter``)
sends prompts above a threshold to a pool of their own, the handbook's separate long-context pool.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from operator import attrgetter
from typing import NamedTuple

_OUTSTANDING, _FREE_KV = attrgetter("outstanding"), attrgetter("free_kv_tokens")   # (cheaper than lambdas)


class FleetRequest(NamedTuple):
    """What a router knows about a request."""

    id: int
    arrival: float
    input_len: int
    output_len: int
    session: int
    prefix: tuple | None = None     # prefix identity (sim/kv/prefix_cache.py), when the workload has it


class Router:
    """Base class: subclasses implement ``select_worker``."""

    name = "router"
    needs_state = True          # reads worker state (outstanding, free KV, ...); False: reads none

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def select_worker(self, request: FleetRequest, workers: list):
        raise NotImplementedError

    def select_pair(self, request: FleetRequest, prefill_workers: list, decode_workers: list):
        return self.select_worker(request, prefill_workers), self.select_worker(request, decode_workers)

    def select_pool(self, request: FleetRequest, pool_names: tuple) -> str:
        return pool_names[0]

    def on_request_complete(self, request: FleetRequest, worker) -> None:
        pass

    @property
    def has_completion_hook(self) -> bool:
        """Whether ``on_request_complete`` does anything (the fleet then reports finishes promptly)."""
        return type(self).on_request_complete is not Router.on_request_complete


class RoundRobin(Router):
    """Each pool's workers in turn (the turn counts requests, per pool)."""

    name = "round_robin"
    needs_state = False

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.turn: dict[str, int] = {}

    def select_worker(self, request, workers):
        pool = workers[0].pool
        k = self.turn.get(pool, 0)
        self.turn[pool] = k + 1
        return workers[k % len(workers)]


class Random(Router):
    """A uniformly random worker, from ``random.Random(seed)``."""

    name = "random"
    needs_state = False

    def select_worker(self, request, workers):
        return workers[self.rng.randrange(len(workers))]


class LeastRequests(Router):
    """Fewest outstanding requests; ties go to the lowest id."""

    name = "least_requests"

    def select_worker(self, request, workers):
        return min(workers, key=_OUTSTANDING)      # min keeps the first of equals


class LeastKV(Router):
    """Most free KV tokens (capacity minus reservations); ties go to the lowest id."""

    name = "least_kv"

    def select_worker(self, request, workers):
        return max(workers, key=_FREE_KV)          # max keeps the first of equals


class PowerOfTwo(Router):
    """Two distinct random workers, the one with fewer outstanding requests (the first on a tie).

    Nearly as balanced as least_requests while reading only two instances' state: the choice for
    a gateway with many instances (Mitzenmacher's power of two choices)."""

    name = "power_of_two"

    def select_worker(self, request, workers):
        if len(workers) == 1:
            return workers[0]
        a, b = self.rng.sample(range(len(workers)), 2)
        wa, wb = workers[a], workers[b]
        return wb if wb.outstanding < wa.outstanding else wa


class SessionAffinity(Router):
    """Consistent hashing of the request's session id onto a ring of ``replicas`` points per worker.

    A session keeps its instance while the pool is unchanged; when an instance joins or leaves,
    only the sessions on its arcs move. Hashes are md5 (stable across runs and machines)."""

    name = "session_affinity"
    needs_state = False

    def __init__(self, seed: int = 0, replicas: int = 64):
        super().__init__(seed)
        self.replicas = replicas
        self._rings: dict[tuple, tuple[list[int], list]] = {}

    def select_worker(self, request, workers):
        key = tuple(w.id for w in workers)
        ring = self._rings.get(key)
        if ring is None:
            points = sorted((_hash(f"worker-{w.id}-{j}"), i) for i, w in enumerate(workers)
                            for j in range(self.replicas))
            ring = ([p for p, _ in points], [i for _, i in points])
            self._rings[key] = ring
        hashes, owners = ring
        k = bisect.bisect_left(hashes, _hash(f"session-{request.session}"))
        return workers[owners[k % len(owners)]]


class PrefixAware(Router):
    """The longest cached prefix, with a load guard (SGLang's cache-aware router, simplified).

    Candidates are the workers whose outstanding requests are at most ``max(min + slack,
    min x ratio)``, min being the least loaded worker's: a hot prefix cannot pile every request on
    the instance that holds it. Among them, the most prompt tokens cached on the GPU (exact: the
    instance's own cache), then fewer outstanding requests, then the lowest id."""

    name = "prefix_aware"

    def __init__(self, seed: int = 0, slack: int = 4, ratio: float = 1.5):
        super().__init__(seed)
        self.slack, self.ratio = slack, ratio

    def select_worker(self, request, workers):
        loads = [w.outstanding for w in workers]
        low = min(loads)
        cap = max(low + self.slack, low * self.ratio)
        ask = request.prefix is not None          # without prefix identity: the least loaded
        best, key = None, None
        for w, load in zip(workers, loads):
            if load > cap:
                continue
            k = (w.cached_prefix_tokens(request) if ask else 0, -load)
            if key is None or k > key:
                best, key = w, k
        return best


class PoolRule(NamedTuple):
    """Requests whose ``field`` (a ``FleetRequest`` attribute) is above ``above`` go to ``pool``."""

    pool: str
    field: str = "input_len"
    above: float = 32768


class RuleRouter(Router):
    """A routing rule on request attributes, then a router inside the pool.

    ``rules`` (``PoolRule``s) are tried in order: the first whose field is above its threshold picks
    the pool; a request no rule matches goes to the fleet's first pool. Inside the pool ``inner``
    (a name in ``ROUTERS`` or a ``Router``) picks the worker; it keeps its own state, so a
    round robin turns per pool."""

    name = "by_rule"

    def __init__(self, seed: int = 0, rules=(PoolRule("long"),), inner="least_requests"):
        super().__init__(seed)
        self.rules = tuple(PoolRule(*r) if not isinstance(r, PoolRule) else r for r in rules)
        for r in self.rules:
            if r.field not in FleetRequest._fields:
                raise ValueError(f"rules: field must be one of {list(FleetRequest._fields)}, got {r.field!r}")
        self.inner = make_router(inner, seed)
        self.needs_state = self.inner.needs_state

    def select_pool(self, request, pool_names):
        for r in self.rules:
            if getattr(request, r.field) > r.above:
                return r.pool
        return pool_names[0]

    def select_worker(self, request, workers):
        return self.inner.select_worker(request, workers)

    def select_pair(self, request, prefill_workers, decode_workers):
        return self.inner.select_pair(request, prefill_workers, decode_workers)

    def on_request_complete(self, request, worker):
        self.inner.on_request_complete(request, worker)

    @property
    def has_completion_hook(self) -> bool:
        return self.inner.has_completion_hook


class ByLength(RuleRouter):
    """Prompts longer than ``threshold`` tokens go to pool ``pool``, the rest to the main pool
    (the handbook's separate pool for requests above 32K); ``inner`` picks inside each pool."""

    name = "by_length"

    def __init__(self, seed: int = 0, threshold: int = 32768, pool: str = "long", inner="least_requests"):
        super().__init__(seed, rules=(PoolRule(pool, "input_len", threshold),), inner=inner)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode()).digest()[:8], "big")


ROUTERS: dict[str, type[Router]] = {cls.name: cls for cls in
                                     (RoundRobin, Random, LeastRequests, LeastKV, PowerOfTwo, SessionAffinity,
                                      PrefixAware, ByLength)}


def make_router(router, seed: int = 0) -> Router:
    """A fresh router from a name in ``ROUTERS``, or a copy of a ``Router`` object (so that every
    run starts from the same router state)."""
    import copy
    if isinstance(router, Router):
        return copy.deepcopy(router)
    if isinstance(router, str) and router in ROUTERS:
        return ROUTERS[router](seed)
    raise ValueError(f"router must be one of {sorted(ROUTERS)} or a sim.fleet.Router, got {router!r}")
