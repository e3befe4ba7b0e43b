"""Prefix caching and its host tier (sim/kv/prefix_cache.py): the engine against the plain reference
bit for bit, hand-worked hits, the read-back-or-recompute choice, summarize's figures, bad input."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TICK, ticks, tiny_setup
from test_kv_paged import assert_same_as_reference
from sim import run, summarize, workload
from sim.kv import Paged, PrefixCache

PROFILE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cached_case(draw):
    B = draw(st.sampled_from([1, 2, 4, 16]))
    n = draw(st.integers(1, 14))
    inputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    outputs = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    fit = max(-(-(i + o) // B) for i, o in zip(inputs, outputs)) + 1
    blocks = draw(st.integers(fit, 4 * fit))
    host = draw(st.sampled_from([None, 0, 8, 200]))
    cache = PrefixCache() if host is None else PrefixCache(
        host_tokens=host, host_link_gbs=draw(st.sampled_from([1e-9, 1e-6, 1e3])))
    kv = Paged(block_size=B, watermark=0.0, preemption=draw(st.sampled_from(["recompute", "swap"])), swap_gbs=1e-6)
    setup = tiny_setup(kv=draw(st.sampled_from([0, 1])), budget=draw(st.sampled_from([1, 4, 16, 64])),
                       seqs=draw(st.integers(1, 8)), cap=blocks * B).replace(kv=kv, prefix_cache=cache)
    gaps = draw(st.lists(st.sampled_from([0.0, TICK, 0.01, 1.0]), min_size=n, max_size=n))
    prefixes = []
    for i in range(n):                                # a shared system prompt, then a session's own
        segs = []
        if draw(st.booleans()):
            segs.append((draw(st.integers(0, 2)), draw(st.integers(1, inputs[i]))))
        if draw(st.booleans()):
            end = draw(st.integers(1, inputs[i] + outputs[i]))
            if not segs or end > segs[-1][1]:
                segs.append((draw(st.integers(3, 5)), end))
        prefixes.append(tuple(segs) or None)
    return setup, np.cumsum(gaps).tolist(), inputs, outputs, prefixes


@PROFILE
@given(case=cached_case())
def test_prefix_cache_equals_the_plain_reference(case):
    setup, arrivals, inputs, outputs, prefixes = case
    assert_same_as_reference(setup, arrivals, inputs, outputs, prefixes)


CACHED = tiny_setup(budget=16, cap=40).replace(kv=Paged(block_size=2, watermark=0), prefix_cache=PrefixCache())


def test_a_hit_skips_the_cached_tokens_compute():
    # r0 (prompt 8, output 2, content key 7 over tokens [0, 10)) runs alone: 8 prompt tokens
    # (8 ticks), one decode (2 ticks). It wrote 8 + 2 - 1 = 9 tokens: 4 full blocks are kept.
    # r1, same content, at 1 s: at most (8 - 1) // 2 = 3 blocks may hit (its last prompt token is
    # computed): 6 tokens cached, 2 computed (2 ticks), then one decode (2 ticks).
    prefix = ((7, 10),)
    res, _ = assert_same_as_reference(CACHED, [0.0, 1.0], [8, 8], [2, 2], [prefix, prefix])
    assert ticks(res.finish - res.arrival) == [10, 4]
    assert res.cached_tokens.tolist() == [0, 6]
    assert res.steps.tokens.tolist() == [8, 1, 2, 1]
    assert res.steps.context.tolist() == [0, 9, 6, 9]        # the cached tokens are held and read
    s = summarize(res, None, None)
    assert s["prefix_hit_rate"] == 6 / 16 and s["cached_share"] == 6 / 16


def test_different_content_does_not_hit():
    res, _ = assert_same_as_reference(CACHED, [0.0, 1.0], [8, 8], [2, 2], [((7, 10),), ((8, 10),)])
    assert res.cached_tokens.tolist() == [0, 0]


@pytest.mark.parametrize("link_gbs, read_back", [(1024e-9, True), (1e-9, False)])
def test_host_tier_reads_back_when_cheaper_than_recompute(link_gbs, read_back):
    # 6 blocks of 2 tokens. r0 (key 7) leaves 4 named blocks; r2 (key 9) needs 4 + 1 blocks: the 2
    # plain free ones, then r0's blocks 3, 2 and 1 are evicted (the tail first) to the host.
    # r3 (key 7) then finds block 0 on the GPU and blocks 1, 2 on the host. Recomputing a block
    # costs 2 ticks (2 tokens of matmuls); reading it back 2 bytes / link: 2 ticks at 1024 B/s
    # (read back: the tie goes to the read-back), 2 s at 1 B/s (recompute: the hit stops at block 1).
    setup = tiny_setup(kv=1, budget=16, cap=12).replace(
        kv=Paged(block_size=2, watermark=0), prefix_cache=PrefixCache(host_tokens=100, host_link_gbs=link_gbs))
    pa, pb = ((7, 10),), ((9, 10),)
    res, _ = assert_same_as_reference(setup, [0.0, 1.0, 2.0], [8, 8, 8], [2, 2, 2], [pa, pb, pa])
    if read_back:
        assert res.cached_tokens.tolist() == [0, 0, 6] and res.host_tokens.tolist() == [0, 0, 4]
        assert res.steps.readback.sum() == 1
        assert res.steps.extra_s[res.steps.readback].tolist() == [2 * 2 * 1 / 1024]
        assert summarize(res, None, None)["host_hit_rate"] == 4 / 24
    else:
        assert res.cached_tokens.tolist() == [0, 0, 2] and res.host_tokens.tolist() == [0, 0, 0]
        assert not res.steps.readback.any()


def test_shared_system_prompts_hit_and_save_prefill(chapter_like):
    load = workload.shared_prompts(20, 400, prompts=4, system_len=1500, input_len=200, output_len=100, seed=3)
    paged = chapter_like.replace(kv="paged")
    plain = summarize(run(paged, load), None, None)
    res = run(paged.replace(prefix_cache=PrefixCache()), load)
    cached = summarize(res, None, None)
    assert 0.7 < cached["prefix_hit_rate"] < 0.9 and cached["ttft_p50"] < 0.5 * plain["ttft_p50"]
    # features off: the same workload through the reservation rule equals the plain paged run here
    assert plain["ttft_p50"] == summarize(run(chapter_like, load), None, None)["ttft_p50"]


def test_a_disaggregated_fleet_caches_prefixes_on_its_prefill_side(chapter_like):
    from sim.fleet import Fleet, run_fleet, summarize_fleet
    cached = chapter_like.replace(kv="paged", prefix_cache=PrefixCache())
    load = workload.shared_prompts(10, 300, prompts=2, system_len=1500, input_len=100, output_len=50, seed=1)
    s = summarize_fleet(run_fleet(Fleet.pd(cached, 1, chapter_like.replace(kv="paged"), 1), load))
    assert s["prefix_hit_rate"] > 0.5 and s["failed"] == 0


@pytest.mark.parametrize("make, field", [
    (lambda: PrefixCache(host_tokens=1000), "PrefixCache.host_link_gbs"),
    (lambda: PrefixCache(host_tokens=-1), "PrefixCache.host_tokens"),
    (lambda: PrefixCache(host_tokens=10, host_link_gbs=0), "PrefixCache.host_link_gbs"),
    (lambda: tiny_setup().replace(prefix_cache=PrefixCache()), "Setup.prefix_cache"),
])
def test_bad_input_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


@st.composite
def cache_ops(draw):
    """Random requests (prefixes whose keys recur with different segment bounds) admitted, released
    and evicted in random order."""
    B = draw(st.sampled_from([1, 2, 4]))
    host = draw(st.sampled_from([0, 0, 3, 12]))
    prefixes = []
    for _ in range(draw(st.integers(1, 8))):
        segs, end = [], 0
        for _ in range(draw(st.integers(1, 3))):
            end += draw(st.integers(1, 12))
            segs.append((draw(st.integers(0, 3)), end))
        prefixes.append(tuple(segs))
    ops = draw(st.lists(st.tuples(st.sampled_from(["admit", "admit", "release", "evict", "ask"]),
                                  st.integers(0, 10**6), st.integers(0, 40)), max_size=60))
    return B, host, draw(st.booleans()), prefixes, ops


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cache_ops())
def test_block_cache_runs_equal_one_copy_at_a_time(case):
    """BlockCache (runs of copies per key) against kv_reference.NameCache (one copy at a time): every
    lookup (hits, host hits, free hits), free count and router answer, and the exact LRU orders,
    on random admissions (a lookup, then new copies of the rest: duplicates included), releases
    and evictions; private names (beyond the segments) too."""
    assert_same_cache(case)


def test_a_range_held_inside_another_frees_its_outer_parts_tail_first():
    # A computes key 5's blocks 0-5 and lets go; B computes key 7's 0-1 and lets go; A hits 0-5;
    # C hits key 7's 0-1 and key 5's 2-3 (inside A's range); when A lets go, blocks 5, 4 and then
    # 1, 0 of key 5 fall free (2 and 3 are still C's), in that order.
    prefixes = [((5, 6),), ((7, 2),), ((7, 2), (5, 4))]
    ops = [("admit", 0, 6), ("release", 0, 0), ("admit", 1, 2), ("release", 0, 0),
           ("admit", 0, 6), ("admit", 2, 4), ("release", 0, 0), ("evict", 0, 2)]
    assert_same_cache((1, 0, False, prefixes, ops))


def _names(key, lo, hi):
    """Block names of a piece, last block first (the LRU order within it)."""
    if isinstance(key, tuple):
        return [(key, j) for j in range(hi - 1, lo - 1, -1)]
    return [(key << 24) | j for j in range(hi - 1, lo - 1, -1)]


def assert_same_cache(case):
    from kv_reference import NameCache
    from sim.kv.prefix_cache import BlockCache, block_runs, cacheable_blocks, private_key
    B, host, read_back, prefixes, ops = case
    setup = tiny_setup()
    cfg = PrefixCache(host_tokens=host * B, host_link_gbs=1e9 if read_back else 1e-12) if host else PrefixCache()
    fast = BlockCache(cfg, B, setup.kv_bytes_per_token, setup)
    plain = NameCache(host, read_back=fast.readback_s <= fast.recompute_s)
    running = []                                  # (pieces held, copies held)
    for op, pick, size in ops:
        which = pick % len(prefixes)
        prefix = prefixes[which]
        c = cacheable_blocks(prefix, B)
        runs = block_runs(prefix, min(c, size), B)
        if size > c:                              # private to the prefix's owner
            runs.append((private_key(which), c, size))
        names = [n for key, lo, hi in runs for n in reversed(_names(key, lo, hi))]
        if op == "admit":
            pieces, hit, on_host, free, _ = fast.lookup(runs)
            assert (hit, on_host, free) == plain.lookup(names)
            fast.take(pieces)
            held = list(pieces)
            for key, lo, hi in runs:              # computes the rest: new copies
                if hi > hit:
                    held.append(fast.name(key, lo if lo > hit else hit, hi))
            running.append((held, plain.take(names[:hit]) + plain.name(names[hit:])))
        elif op == "release" and running:
            held, copies = running.pop(pick % len(running))
            fast.release(sorted(held, key=lambda p: p[2]))
            plain.release(copies)
        elif op == "evict":
            n = min(size, len(plain.lru))
            fast.evict(n)
            plain.evict(n)
        public = [(key, lo, hi) for key, lo, hi in runs if not isinstance(key, tuple)]
        assert fast.cached_prefix(public) == plain.cached_prefix([n for n in names if not isinstance(n, tuple)])
        assert fast.lru.size == len(plain.lru) and fast.host.size == len(plain.host)
    # the orders themselves: evicting everything lists the LRU, then the host tier
    order = []
    while fast.lru.size:
        for ks, key, lo, hi in fast.lru.pop(1):
            order += _names(key, lo, hi)
    assert order == [plain.of[c] for c in plain.lru]
    order = []
    while fast.host.size:
        for ks, key, lo, hi in fast.host.pop(1):
            order += _names(key, lo, hi)
    assert order == list(plain.host)


# --- vLLM V1's naming, hand-worked (the engine and tests/vllm_reference.py, bit for bit) ----------

def v1_timeline(B, blocks, budget, arrivals, inputs, outputs, prefixes):
    """Engine and reference on the same requests (steps of max(T, 2) ticks); returns both."""
    from sim.engine import run_requests
    from vllm_reference import engine_mismatches, vllm_run
    setup = tiny_setup(budget=budget, cap=blocks * B).replace(kv=Paged(block_size=B), prefix_cache=PrefixCache())
    res = run_requests(setup, arrivals, inputs, outputs, prefix=prefixes)
    ref = vllm_run(setup, arrivals, inputs, outputs, prefixes)
    assert engine_mismatches(res, ref) == []
    return res, ref


def test_a_request_hits_the_prefix_of_one_still_running():
    # Blocks of 4, budget 8. r0 (16-token prompt, key 1) prefills in two chunks, naming blocks 0-1
    # and 2-3 as each is scheduled. r1 (same prompt) arrives at 8 ticks, when r0 takes the whole
    # budget; at 16 ticks r0 decodes and r1 hits 3 blocks (12 tokens: the last prompt token is
    # always computed) while r0 still runs, and computes 4: a step of 5 tokens.
    p = ((1, 16),)
    res, _ = v1_timeline(4, 20, 8, [0.0, 8 * TICK], [16, 16], [4, 2], [p, p])
    assert res.cached_tokens.tolist() == [0, 12]
    assert res.steps.tokens.tolist()[:3] == [8, 8, 5]
    assert ticks(res.first_token) == [16, 21]


def test_requests_admitted_in_one_step_share_the_blocks_computed_in_it():
    # Blocks of 4, budget 32: r0 and r1 (9-token prompts, key 2 over 8 tokens) arrive together.
    # r0's 9 tokens are scheduled first and name blocks 0-1 at once; r1, admitted next in the same
    # step, hits them (8 tokens) and computes 1: one step of 10 tokens.
    p = ((2, 8),)
    res, _ = v1_timeline(4, 20, 32, [0.0, 0.0], [9, 9], [2, 2], [p, p])
    assert res.cached_tokens.tolist() == [0, 8]
    assert res.steps.tokens.tolist() == [10, 2]


def test_a_readmitted_request_hits_its_own_private_blocks():
    # vLLM's test_kv_connector_handles_preemption without the connector (tests/VLLM_PARITY.md):
    # blocks of 2, 6 of them, two 5-token prompts without prefix identity, 4 output tokens. r1 is
    # preempted at step 3; its blocks are named privately, the last is evicted for r0's new block,
    # and at step 5 r1 (7 tokens) hits its 2 surviving blocks (4 tokens) and computes 3.
    res, ref = v1_timeline(2, 6, 8192, [0.0, 0.0], [5, 5], [4, 4], [None, None])
    assert res.steps.tokens.tolist() == [10, 2, 1, 1, 3, 1]
    assert res.preemptions.tolist() == [0, 1]
    assert res.cached_tokens.tolist() == [0, 4]
    assert ref.pool.evicted[0][1] == ("private", 1, 2)


def test_a_duplicate_is_a_second_copy_and_a_hit_touches_the_first():
    # Blocks of 4, 4 blocks. r0 and r1 (8-token prompts, key 1) start together: r0 names blocks
    # (1,0) and X = (1,1); r1 may hit 1 block only (7 tokens), so it computes (1,1) again: a second
    # copy Y. r0 ends at once (X to the free queue); r1 decodes 4 tokens into (2,2) of its session
    # key and ends: free queue X, (2,2), Y, (1,0). r2 (9 tokens, key 1) hits (1,0) and the FIRST
    # copy X, and takes a new block from the head: (2,2) is evicted (had it touched Y, X would
    # have gone). r3 (13 tokens, session prefix) then hits (1,0) and (1,1) only: 8 tokens.
    sys, session = ((1, 8),), ((1, 8), (2, 16))
    res, ref = v1_timeline(4, 4, 32, [0.0, 0.0, 1.0, 2.0], [8, 8, 9, 13], [1, 5, 1, 1],
                           [sys, session, sys, session])
    assert res.cached_tokens.tolist() == [0, 4, 8, 8]
    assert ref.pool.evicted[0][1] == (2 << 24) | 2


def test_unnamed_blocks_are_reused_first_and_private_ones_queue_behind_shared_ones():
    # Blocks of 4, 3 blocks. r0 (5 tokens, key 7 over 4) ends: its partial block (unnamed) goes to
    # the free queue's head, (7,0) to its tail. r1 (8 tokens, no prefix) takes the never-used block
    # and the partial one: nothing evicted. r1 ends: its two full blocks are named privately and
    # queue behind (7,0). r2 (4 tokens) takes the head: (7,0) is evicted (a plain-free rule would
    # have kept it), so r3 (5 tokens, key 7) hits nothing and takes r1's private blocks, last first.
    res, ref = v1_timeline(4, 3, 32, [0.0, 1.0, 2.0, 3.0], [5, 8, 4, 5], [1, 1, 1, 1],
                           [((7, 4),), None, None, ((7, 4),)])
    assert res.cached_tokens.tolist() == [0, 0, 0, 0]
    assert [name for _, name in ref.pool.evicted] == [(7 << 24) | 0, ("private", 1, 1), ("private", 1, 0)]
