"""Workloads with shared prefixes (sim/sessions.py): multi-turn sessions and shared system prompts,
run by one instance (follow-ups think_s after the previous answer) and by a fleet with the
prefix-aware router."""

import numpy as np
import pytest

from kv_reference import plain_kv_run
from sim import lengths, run, summarize, workload
from sim.fleet import Fleet, run_fleet, summarize_fleet
from sim.kv import Paged, PrefixCache


def test_turns_carry_the_history_and_name_their_content():
    w = workload.multi_turn(1.0, sessions=2, turns=3, system_len=100, message_len=10, output_len=20, think_s=2.0)
    rows = sorted(zip(w.session, w.input_len, w.prefix, w.follows, range(len(w))))
    assert [r[1] for r in rows] == [110, 140, 170] * 2            # system + (message + answer) x t + message
    s0 = rows[0]
    assert s0[2] == ((0, 100), (1, 130))                          # system prompt 0, then session 0's own
    assert [r[3] for r in rows[:3]] == [-1, rows[0][4], rows[1][4]]
    again = workload.multi_turn(1.0, 2, 3, 100, 10, 20, think_s=2.0)
    assert again.arrival == w.arrival and again.prefix == w.prefix
    assert workload.multi_turn(1.0, 2, 3, 100, 10, 20, seed=1).arrival != w.arrival


def test_a_follow_up_arrives_think_s_after_the_previous_answer(chapter_like):
    w = workload.multi_turn(2.0, sessions=30, turns=4, system_len=800, message_len=lengths.Uniform(20, 200),
                            output_len=150, think_s=3.0, seed=2)
    setup = chapter_like.replace(kv="paged", prefix_cache=PrefixCache())
    res = run(setup, w)
    follows = np.array(w.follows)
    later = follows >= 0
    assert np.array_equal(res.arrival[later], res.finish[follows[later]] + 3.0)
    first = ~later
    assert np.array_equal(res.arrival[first], np.array(w.arrival)[first])
    # given those arrival times, the run is the plain reference's, bit for bit
    order = np.argsort(res.arrival, kind="stable")
    reqs, _, _ = plain_kv_run(setup, res.arrival[order].tolist(), res.input_len[order].tolist(),
                              res.output_len[order].tolist(), [w.prefix[i] for i in order])
    assert np.array_equal(res.finish[order], [r.finish for r in reqs])
    s = summarize(res, None, None)
    assert s["prefix_hit_rate"] > 0.8                  # every later turn finds its history


def test_shared_prompts_follow_their_popularity():
    w = workload.shared_prompts(10, 3000, prompts=5, system_len=500, input_len=50, output_len=10, skew=1.0, seed=4)
    keys = np.array([p[0][0] for p in w.prefix])
    counts = np.bincount(keys, minlength=5)
    assert list(counts) == sorted(counts, reverse=True)
    assert counts[0] / 3000 == pytest.approx(1 / sum(1 / k for k in range(1, 6)), abs=0.03)
    assert set(w.input_len) == {550}


def test_a_session_that_cannot_fit_alone_is_refused(chapter_like):
    w = workload.multi_turn(1.0, 2, 20, system_len=4000, message_len=500, output_len=500)
    with pytest.raises(ValueError, match="fit"):
        run(chapter_like.replace(kv_capacity_tokens=16_000, kv="paged"), w)
    with pytest.raises(ValueError, match="turns"):
        workload.multi_turn(1.0, 2, 0, 100, 10, 10)


def test_prefix_aware_routing_keeps_prefixes_together_under_a_load_guard(chapter_like):
    # 24 system prompts of 2,000 tokens: more than one instance's 30,000 tokens of KV can keep.
    setup = chapter_like.replace(kv_capacity_tokens=30_000, kv=Paged(), prefix_cache=PrefixCache())
    load = workload.shared_prompts(40, 1500, prompts=24, system_len=2000, input_len=100, output_len=50,
                                   skew=0.5, seed=5)
    hit = {}
    for router in ("round_robin", "prefix_aware"):
        s = summarize_fleet(run_fleet(Fleet.of(setup, 4, router=router), load))
        hit[router] = s["prefix_hit_rate"]
    assert hit["prefix_aware"] > hit["round_robin"] + 0.1, hit
    # One hot prompt: the guard spreads it rather than queueing everything on one instance.
    hot = workload.shared_prompts(40, 1500, prompts=1, system_len=2000, input_len=100, output_len=50, seed=5)
    res = run_fleet(Fleet.of(setup, 4, router="prefix_aware"), hot)
    assert summarize_fleet(res)["colocated_imbalance"] < 1.5
    assert len(set(res.instance.tolist())) == 4
