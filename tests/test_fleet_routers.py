"""Routers, hand-worked on two instances and four requests, event by event.

tiny_setup: a step of T tokens lasts max(T, 2) ticks. Requests (prompt, output): r0 (2, 20) at 0,
r1 (2, 3) at 1 tick, r2 (2, 3) at 8 ticks, r3 (2, 3) at 9 ticks. Alone, a request's prompt takes
one 2-tick step and each further token one 2-tick step.

What each instance holds when a request arrives (a gateway's view):
- r1 at 1: i0 runs r0 (1 outstanding, 22 KV tokens reserved); i1 is empty.
- r2 at 8: i0 still runs r0; i1 finished r1 at 7 (1 -> 3 first token, 5, 7), so it is empty.
- r3 at 9: depends on where r2 went.
"""

import hashlib
import random

import pytest

from conftest import TICK, ticks, tiny_setup
from sim import workload
from sim.fleet import ROUTERS, Fleet, Router, run_fleet
from sim.workload import Workload

ARRIVALS = [0.0, 1 * TICK, 8 * TICK, 9 * TICK]
W = Workload("test", tuple(ARRIVALS), (2, 2, 2, 2), (20, 3, 3, 3))


def routes(result):
    return [(ticks([t])[0], g, w) for t, kind, g, w, _ in result.events if kind == "route"]


def run(router, sessions=None, n=2):
    return run_fleet(Fleet.of(tiny_setup(), n, router=router), W, sessions=sessions)


def test_round_robin():
    res = run("round_robin")
    assert routes(res) == [(0, 0, 0), (1, 1, 1), (8, 2, 0), (9, 3, 1)]
    # i0 at 8: r0 decodes and r2's prompt joins (3 tokens, 3 ticks -> 11: r2's first token), then
    # 2-tick steps: r2 finishes at 15. i1: r3 alone from 9: first token at 11, finish at 15.
    assert ticks(res.first_token) == [2, 3, 11, 11]
    assert ticks(res.finish)[1:] == [7, 15, 15]
    # r0: tokens at 2, 4, 6, 8, 11, 13, 15, then every 2 ticks: token 20 at 15 + 13 * 2
    assert ticks(res.finish)[0] == 41
    assert res.instance.tolist() == [0, 1, 0, 1]


def test_least_requests():
    # r2 at 8: i0 has 1 outstanding, i1 none -> i1. r3 at 9: both have 1 -> the lowest id, i0.
    res = run("least_requests")
    assert routes(res) == [(0, 0, 0), (1, 1, 1), (8, 2, 1), (9, 3, 0)]
    # i1: r2 alone from 8: first 10, finish 14. i0 at 10 (r0's step 8 -> 10 runs first): r3 joins
    # the step at 10 (3 tokens -> 13, first token), then 2-tick steps: finish 17.
    assert ticks(res.first_token)[2:] == [10, 13]
    assert ticks(res.finish)[2:] == [14, 17]


def test_least_kv():
    # r2 at 8: free KV i0 = 1000 - 22, i1 = 1000 -> i1. r3 at 9: i1 reserved 5 for r2 (995 > 978) -> i1.
    res = run("least_kv")
    assert routes(res) == [(0, 0, 0), (1, 1, 1), (8, 2, 1), (9, 3, 1)]
    # i1: r2's prompt 8 -> 10; at 10 r2 decodes and r3's prompt joins (3 ticks -> 13); r2 finishes
    # at 15 (tokens at 10, 13, 15), r3 at 17 (13, 15, 17).
    assert ticks(res.first_token)[2:] == [10, 13]
    assert ticks(res.finish)[2:] == [15, 17]


def test_a_step_in_progress_counts_as_not_finished():
    # r1 arrives at 1 tick while i0's first step (0 -> 2) runs: i0 still holds r0 at t = 1,
    # whichever way the instance's step has been committed.
    w = Workload("test", (0.0, TICK), (2, 2), (1, 1))
    res = run_fleet(Fleet.of(tiny_setup(), 2, router="least_requests"), w)
    assert res.instance.tolist() == [0, 1]


def test_random_is_seeded():
    rng = random.Random(7)
    expected = [rng.randrange(2) for _ in range(4)]
    res = run_fleet(Fleet.of(tiny_setup(), 2, router="random", seed=7), W)
    assert res.instance.tolist() == expected


def test_power_of_two_compares_the_two_drawn():
    # With two instances both are always drawn, so the choice is the less loaded, and a tie goes to
    # the first drawn. r0 at 0 (a tie) -> the first drawn, a; r1 at 1: a holds r0 -> the other;
    # r2 at 8: a holds r0, the other is empty -> the other; r3 at 9: both hold one -> first drawn.
    for seed in range(6):
        rng = random.Random(seed)
        draws = [rng.sample(range(2), 2) for _ in range(4)]
        a = draws[0][0]
        res = run_fleet(Fleet.of(tiny_setup(), 2, router="power_of_two", seed=seed), W)
        assert res.instance.tolist() == [a, 1 - a, 1 - a, draws[3][0]]


def test_session_affinity_is_consistent_hashing():
    def h(text):
        return int.from_bytes(hashlib.md5(text.encode()).digest()[:8], "big")
    ring = sorted((h(f"worker-{w}-{j}"), w) for w in range(2) for j in range(64))

    def owner(session):
        x = h(f"session-{session}")
        return next((w for p, w in ring if p >= x), ring[0][1])
    sessions = [11, 42, 11, 42]
    res = run("session_affinity", sessions=sessions)
    assert res.instance.tolist() == [owner(s) for s in sessions]
    # with three instances, only the sessions on the new instance's arcs move
    moved = sum(run_fleet(Fleet.of(tiny_setup(), 3, router="session_affinity"),
                          workload.uniform(1000, 200, 2, 2), sessions=list(range(200))).instance !=
                run_fleet(Fleet.of(tiny_setup(), 2, router="session_affinity"),
                          workload.uniform(1000, 200, 2, 2), sessions=list(range(200))).instance)
    assert 30 < moved < 110


def test_a_learner_router_and_the_completion_hook():
    class Shortest(Router):
        """Prefer the instance that finished more requests (a toy that uses the hook)."""
        def __init__(self, seed=0):
            super().__init__(seed)
            self.done = {}

        def select_worker(self, request, workers):
            return max(workers, key=lambda w: (self.done.get(w.id, 0), -w.id))

        def on_request_complete(self, request, worker):
            self.done[worker.id] = self.done.get(worker.id, 0) + 1

    res = run(Shortest())
    # r1 at 1 tick: nothing finished yet -> i0. r1 finishes on i0 (the hook fires) before r2 at 8.
    assert res.instance.tolist()[:2] == [0, 0]
    assert not res.failed.any()


def test_registry_names():
    assert set(ROUTERS) == {"round_robin", "random", "least_requests", "least_kv", "power_of_two",
                            "session_affinity", "prefix_aware", "by_length"}


def test_unknown_router_names_the_field():
    with pytest.raises(ValueError, match="router must be one of"):
        Fleet.of(tiny_setup(), 2, router="fastest")


# --- a routing rule on request attributes: a separate pool for long prompts -------------------------

def long_pool_fleet(router=None, **options):
    """Main pool: one tiny instance (budget 4); pool "long": one with budget 8."""
    from sim.fleet import Pool
    router = router if router is not None else ROUTERS["by_length"](threshold=3, inner="round_robin")
    return Fleet.of(tiny_setup(), 1, router=router, pools={"long": Pool(tiny_setup(budget=8), 1)}, **options)


def test_by_length_sends_long_prompts_to_their_pool():
    # r0 (2, 2) at 0 -> main (i0); r1 (6, 2) at 0 -> long (i1); r2 (4, 2) at 1 -> long; r3 (3, 2) at 1
    # -> main (3 is not above 3).
    # i0, budget 4: 0 -> 2 r0's prompt (first token 2); at 2 r0 decodes + r3's prompt (4 tokens, 4
    # ticks) -> 6: r0 done, r3's first token; 6 -> 8 r3 done.
    # i1, budget 8: 0 -> 6 r1's prompt (6 ticks); at 6 r1 decodes + r2's prompt (5 tokens) -> 11: r1
    # done, r2's first token; 11 -> 13 r2 done.
    w = Workload("test", (0.0, 0.0, TICK, TICK), (2, 6, 4, 3), (2, 2, 2, 2))
    res = run_fleet(long_pool_fleet(), w)
    assert routes(res) == [(0, 0, 0), (0, 1, 1), (1, 2, 1), (1, 3, 0)]
    assert ticks(res.first_token) == [2, 6, 11, 6]
    assert ticks(res.finish) == [6, 11, 13, 8]
    assert [(r.id, r.pool) for r in res.workers] == [(0, "colocated"), (1, "long")]
    # one shared pool of the same two instances (round robin): r3 lands behind r1's long prompt
    shared = run_fleet(Fleet.of(tiny_setup(), 2, router="round_robin"), w)
    assert shared.instance.tolist() == [0, 1, 0, 1]
    assert ticks(shared.first_token)[3] > ticks(res.first_token)[3]


def test_a_rule_on_any_request_attribute():
    from sim.fleet import PoolRule, RuleRouter
    # output_len above 2 goes to "long": r1 (2, 3) -> i1, the rest -> i0
    router = RuleRouter(rules=[PoolRule("long", "output_len", 2)], inner="least_requests")
    res = run_fleet(long_pool_fleet(router), Workload("test", (0.0, 0.0, TICK), (2, 2, 2), (2, 3, 1)))
    assert res.instance.tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="field must be one of"):
        RuleRouter(rules=[PoolRule("long", "colour", 2)])


def test_lengths_are_checked_against_the_pool_a_request_goes_to():
    from sim.fleet import Pool
    big = Pool(tiny_setup(budget=8, cap=5000), 1)
    w = Workload("test", (0.0, TICK), (2, 2000), (2, 2))      # 2002 tokens do not fit the main pool's 1000
    with pytest.raises(ValueError, match="pool 'colocated': request 1: input_len"):
        run_fleet(Fleet.of(tiny_setup(), 1, router="by_length", pools={"long": big}), w)   # 2000 <= 32K
    res = run_fleet(Fleet.of(tiny_setup(), 1, router=ROUTERS["by_length"](threshold=1000), pools={"long": big}), w)
    assert res.instance.tolist() == [0, 1] and not res.failed.any()
    with pytest.raises(ValueError, match="kv_capacity_tokens"):
        run_fleet(Fleet.of(tiny_setup(), 1, router="round_robin", pools={"long": big}), w)


def test_a_rule_naming_a_missing_pool_is_refused_before_the_run():
    w = Workload("test", (0.0,), (40000,), (2,))
    with pytest.raises(ValueError, match="to pool 'long', but the fleet's pools are"):
        run_fleet(Fleet.of(tiny_setup(cap=50000), 1, router="by_length"), w)


def test_bad_pools_name_the_field():
    from sim.fleet import Autoscaler, Pool
    with pytest.raises(ValueError, match="pools"):
        Fleet.of(tiny_setup(), 1, pools={"colocated": Pool(tiny_setup(), 1)})
    with pytest.raises(ValueError, match="pools"):
        Fleet.of(tiny_setup(), 1, pools={"long": tiny_setup()})
    with pytest.raises(ValueError, match="pools"):
        Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, pools={"long": Pool(tiny_setup(), 1)})
    with pytest.raises(ValueError, match="autoscaler"):
        Fleet.of(tiny_setup(), 1, pools={"long": Pool(tiny_setup(), 1)}, autoscaler=Autoscaler())
