"""PD disaggregation: a prefill pool and a decode pool joined by a KV link, hand-worked."""

import math

import numpy as np
import pytest

from conftest import TICK, ticks, tiny_setup
from sim import summarize, workload
from sim.fleet import Fleet, Link, Router, run_fleet, summarize_fleet
from sim.workload import Workload


def test_transfer_time_is_bytes_over_bandwidth_plus_latency():
    # 2000 tokens x 160 KiB = 327.68 MB over 50 GB/s = 6.5536 ms, plus 1 ms
    assert Link(50.0, 1e-3).transfer_s(2000, 163840) == pytest.approx(2000 * 163840 / 50e9 + 1e-3)


def test_pd_timeline_event_by_event():
    # Prefill instance 0, decode instance 1; link latency 3 ticks, kv 0 bytes (the transfer is the
    # latency alone). r0 (prompt 4, out 3) at 0, r1 (prompt 2, out 2) at 1 tick.
    # prefill: 0 -> 4 r0's prompt (4 tokens): first token at 4; r1 joins at 4: 4 -> 6, first at 6.
    # transfers: r0 4 -> 7, r1 6 -> 9.
    # decode: r0 admitted at 7 (1 token, 2 ticks) -> token 2 at 9; at 9 r1 joins: 2 tokens,
    # 2 ticks -> 11: r0's token 3 (finished) and r1's token 2 (finished).
    fleet = Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, link_gbs=1.0, link_latency_s=3 * TICK)
    res = run_fleet(fleet, Workload("test", (0.0, TICK), (4, 2), (3, 2)))
    assert [(ticks([t])[0], kind, g, w, x) for t, kind, g, w, x in res.events] == [
        (0, "route", 0, 0, 1), (1, "route", 1, 0, 1),
        (4, "transfer", 0, 0, 1), (6, "transfer", 1, 0, 1),
        (7, "decode", 0, 1, None), (9, "decode", 1, 1, None)]
    assert ticks(res.first_token) == [4, 6]
    assert ticks(res.finish) == [11, 11]
    assert ticks(res.ttft) == [4, 5]            # the transfer is not in TTFT ...
    assert ticks(res.tpot) == [3.5, 5]          # ... it is in TPOT
    assert ticks(res.transfer_s) == [3, 3]
    assert res.prefill_instance.tolist() == [0, 0] and res.instance.tolist() == [1, 1]
    # the prefill instance ran prompts only; the decode instance one token per request per step
    assert res.instance_steps(0).tokens.tolist() == [4, 2]
    assert res.instance_steps(1).tokens.tolist() == [1, 2]



def test_itl_includes_the_gap_a_transfer_opens():
    # The timeline above: r0's tokens at 4 (prefill), 9, 11; r1's at 6 (prefill), 11. Steps of the
    # decode instance: 7 -> 9 (r0's token 2) and 9 -> 11 (r0's token 3, r1's token 2), 2 ticks each.
    # The inter-token gaps are r0: 5, 2; r1: 5 -- not the three 2-tick step durations.
    fleet = Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, link_gbs=1.0, link_latency_s=3 * TICK)
    res = run_fleet(fleet, Workload("test", (0.0, TICK), (4, 2), (3, 2)))
    assert ticks(res.second_token) == [9, 11]
    gaps, counts = res.itl_samples()
    assert sorted(ticks(np.repeat(gaps, counts))) == [2, 5, 5]
    s = summarize(res, None, None)
    assert ticks([s["itl_p50"], s["itl_p99"]]) == [5, 5]
    # colocated, the same requests: the first gap is a step's duration, as before
    co = run_fleet(Fleet.of(tiny_setup(), 1), Workload("test", (0.0, TICK), (4, 2), (3, 2)))
    gaps, counts = co.itl_samples()
    assert np.array_equal(gaps, co.steps.duration) and np.array_equal(counts, co.steps.decoders)


def test_one_token_outputs_finish_on_the_prefill_side():
    fleet = Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, link_latency_s=TICK)
    res = run_fleet(fleet, Workload("test", (0.0,), (4,), (1,)))
    assert ticks(res.finish) == [4] and res.instance.tolist() == [0]
    assert np.isnan(res.transfer_s[0])


def test_colocated_and_disaggregated_side_by_side(chapter_like):
    w = workload.poisson(15, 400, 2000, 200, seed=1)
    co = summarize_fleet(run_fleet(Fleet.of(chapter_like, 4, router="least_requests"), w), 2.0, 0.05)
    pd = summarize_fleet(run_fleet(Fleet.pd(chapter_like, 2, chapter_like, 2, router="least_requests"), w),
                         2.0, 0.05)
    for s in (co, pd):
        assert s["requests"] == 400
    assert pd["transfer_p50"] == pytest.approx(2000 * chapter_like.kv_bytes_per_token / 50e9 + 1e-3)
    assert 0 < pd["prefill_utilisation"] < 1 and 0 < pd["decode_utilisation"] <= 1
    # decode instances never run prompts: no prefill chunk lengthens their steps (a tenth of the ITL)
    assert pd["itl_p99"] < co["itl_p99"] / 5


def test_bad_link_names_the_field():
    with pytest.raises(ValueError, match="link_gbs"):
        Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, link_gbs=0)
    with pytest.raises(ValueError, match="link_latency_s"):
        Fleet.pd(tiny_setup(), 1, tiny_setup(), 1, link_latency_s=-1)
    with pytest.raises(ValueError, match="Pool.instances"):
        Fleet.pd(tiny_setup(), 0, tiny_setup(), 1)


class Table(Router):
    """Sends request g to prefill instance ``table[g]`` and the first decode instance."""
    needs_state = False

    def __init__(self, table):
        super().__init__()
        self.table = table

    def select_pair(self, request, prefill, decode):
        return prefill[self.table[request.id]], decode[0]


def test_transfers_landing_together_are_admitted_in_request_order():
    # One request at a time everywhere (max_num_seqs 1); the link takes no time (kv 0 bytes,
    # latency 0). Prompts 4, 2, 2, 2, outputs 2; r0 at 0 -> p1, r1, r2 at 2 ticks -> p0, r3 at 2 -> p1.
    # p1: r0 0 -> 4, r3 4 -> 6. p0: r1 2 -> 4, r2 4 -> 6. So r2 and r3 both land at 6, and p1's step
    # at 4 was scheduled first (at r3's routing, before p0's step at 2 ran): the decode instance
    # must still take them in request order. Decode: r0 4 -> 6, r1 6 -> 8, r2 8 -> 10, r3 10 -> 12.
    s = tiny_setup(seqs=1)
    fleet = Fleet.pd(s, 2, s, 1, router=Table([1, 0, 0, 1]), link_gbs=1.0, link_latency_s=0.0)
    res = run_fleet(fleet, Workload("test", (0.0, 2 * TICK, 2 * TICK, 2 * TICK), (4, 2, 2, 2), (2, 2, 2, 2)))
    assert ticks(res.first_token) == [4, 4, 6, 6]
    assert ticks(res.finish) == [6, 8, 10, 12]
