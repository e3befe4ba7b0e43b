"""Hidden cases for 143: LRU order in both tiers after every read, tier sizes at their edges,
random and adversarial read sequences vs the reference (and, replayed through sim's prefix cache with
its host tier, vs sim), read time, invalid inputs."""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error


def run_and_check(gpu_blocks, cpu_blocks, ops):
    expected = reference.run_two_tier(gpu_blocks, cpu_blocks, ops)
    got = call(submission, "run_two_tier")(gpu_blocks, cpu_blocks, ops)
    if isinstance(got, list):
        for i, record in enumerate(got[:len(expected)]):
            if isinstance(record, dict) and isinstance(record.get("gpu"), list) and isinstance(record.get("cpu"), list):
                g, c = record["gpu"], record["cpu"]
                # invariants: tiers within capacity, no block in both tiers, the read block is most recent
                if len(g) > gpu_blocks or len(c) > cpu_blocks or set(g) & set(c) or not g or g[-1] != ops[i]:
                    raise Mismatch("assert")
            check_close(record, expected[i], path=f"result[{i}]")
    check_close(got, expected)


def test_hit_moves_to_most_recent():
    run_and_check(3, 2, [1, 2, 3, 1, 4, 5])


def test_no_cpu_tier_drops_directly():
    run_and_check(2, 0, [1, 2, 3, 1, 2])


def test_single_gpu_block():
    run_and_check(1, 2, ["a", "b", "a", "c", "b", "d", "a"])


def test_gpu_exactly_full_then_one_more():
    run_and_check(3, 1, [1, 2, 3, 3, 2, 1, 4, 2, 5])


def test_cpu_full_drops_its_oldest():
    run_and_check(2, 2, [1, 2, 3, 4, 5, 6, 3, 1])


def test_promote_when_gpu_not_full():
    run_and_check(3, 3, [1, 2, 3, 4, 1, 1])


def test_empty_ops():
    run_and_check(2, 2, [])


def _random(seed):
    rng = random.Random(seed)
    universe = rng.randint(2, 12)
    hot = rng.random() < 0.5
    ops = [min(int(rng.expovariate(0.5)), universe) if hot else rng.randrange(universe) for _ in range(rng.randint(5, 80))]
    return rng.randint(1, 5), rng.randint(0, 5), ops


RANDOM = [_random(143_000 + i) for i in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    run_and_check(*RANDOM[index])


def test_scan_larger_than_both_tiers():
    run_and_check(2, 3, list(range(7)) * 3)


def _sim_reads(gpu_blocks, cpu_blocks, ops):
    """The reads replayed through sim's prefix cache (sim/kv/prefix_cache.py), one request per read:
    block size 1, a prompt of the block plus one private token (the last prompt token is always
    computed), room for gpu_blocks cached blocks plus that private one, a host tier of cpu_blocks,
    a link fast enough that reading back beats recomputing. Each request is admitted and released
    at once, so every cached block is free between reads and the GPU tier is sim's LRU. Returns
    where every read was served from and the blocks on the GPU after it (None without sim)."""
    try:
        from sim import Setup
        from sim.kv import Paged, PrefixCache
        from sim.kv.paged import BlockManager
    except ImportError:
        return None
    setup = Setup(params=1e9, weight_bytes=2e9, kv_bytes_per_token=2e5, kv_capacity_tokens=gpu_blocks + 1,
                  max_num_batched_tokens=8, max_num_seqs=1).replace(
        kv=Paged(block_size=1, watermark=0.0),
        prefix_cache=PrefixCache(host_tokens=cpu_blocks, host_link_gbs=1e6 if cpu_blocks else None))
    manager, keys, seen, out = BlockManager(setup), {}, [], []
    for i, block in enumerate(ops):
        if block not in keys:
            keys[block] = len(keys)
            seen.append(block)
        cached, host = manager.admit(i, 2, ((keys[block], 1),))
        manager.release(i, 1, ((keys[block], 1),))    # only the block's KV is kept: the private
                                                          # token's block goes back unnamed
        on_gpu = sorted((b for b in seen if manager.cached_prefix_tokens(((keys[b], 1),), 2)), key=keys.get)
        out.append(("cpu" if host else "gpu" if cached else "miss", on_gpu))
    return out


_SIM_CHECKED = set()


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random_matches_sims_host_tier(index):
    gpu_blocks, cpu_blocks, ops = RANDOM[index]
    expected = reference.run_two_tier(gpu_blocks, cpu_blocks, ops)
    if index not in _SIM_CHECKED:   # the same rule as sim's GPU LRU backed by its host tier
        got = _sim_reads(gpu_blocks, cpu_blocks, ops)
        if got is not None:
            keys = {b: k for k, b in enumerate(dict.fromkeys(ops))}
            want = [(r["where"], sorted(r["gpu"], key=keys.get)) for r in expected]
            if got != want:
                raise RuntimeError("the reference differs from sim's prefix cache with a host tier")
        _SIM_CHECKED.add(index)
    run_and_check(gpu_blocks, cpu_blocks, ops)


def test_read_time():
    records = reference.run_two_tier(2, 2, [1, 2, 3, 1, 4, 5, 6, 2])
    expected = reference.read_time_ms(records, 1.3e9, 50, 400.0)
    got = call(submission, "read_time_ms")(records, 1.3e9, 50, 400.0)
    check_close(got, expected, rtol=1e-9)


def test_read_time_all_hits_and_zero_recompute():
    records = reference.run_two_tier(1, 1, [7, 7, 7])
    for args in ((records, 1e6, 25, 0.0), (records[1:], 1e6, 25, 3.0)):
        check_close(call(submission, "read_time_ms")(*args), reference.read_time_ms(*args), rtol=1e-9, atol=1e-12)


def test_read_time_small_values():
    records = [{"where": "cpu"}, {"where": "miss"}, {"where": "cpu"}]
    args = (records, 0.5, 0.5, 0.25)
    check_close(call(submission, "read_time_ms")(*args), reference.read_time_ms(*args), rtol=1e-9)


BAD = [
    ("gpu_blocks", "run_two_tier", (0, 1, [])),
    ("gpu_blocks", "run_two_tier", (1.0, 1, [])),
    ("cpu_blocks", "run_two_tier", (1, -1, [])),
    ("cpu_blocks", "run_two_tier", (1, True, [])),
    ("ops", "run_two_tier", (1, 1, "abc")),
    ("ops", "run_two_tier", (1, 1, [1, True])),
    ("ops", "run_two_tier", (1, 1, [1.5])),
    ("block_bytes", "read_time_ms", ([], 0, 50, 1.0)),
    ("block_bytes", "read_time_ms", ([], float("inf"), 50, 1.0)),
    ("pcie_gbs", "read_time_ms", ([], 1e6, 0, 1.0)),
    ("pcie_gbs", "read_time_ms", ([], 1e6, float("nan"), 1.0)),
    ("pcie_gbs", "read_time_ms", ([], 1e6, float("inf"), 1.0)),
    ("recompute_ms", "read_time_ms", ([], 1e6, 50, -1.0)),
    ("recompute_ms", "read_time_ms", ([], 1e6, 50, float("inf"))),
    ("records", "read_time_ms", ([{"where": "disk"}], 1e6, 50, 1.0)),
    ("records", "read_time_ms", ("cpu", 1e6, 50, 1.0)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
