"""Hidden cases for 137: the distribution of nodes reached (one node, one expert per node, all experts,
DeepSeek-V3's shapes from sim.presets), the node limit below, at and above the spread, one step's
traffic, invalid inputs and random inputs vs the reference.
Floats: rtol=1e-9 (distributions also atol=1e-12).
"""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
STEP = dict(hidden=7168, moe_layers=58, experts=256, nodes=8, top_k=8, max_nodes=4, nic_gbs=50)


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


DIST = [("deepseek_8_nodes", 256, 8, 8), ("deepseek_64_nodes", 256, 64, 8), ("deepseek_4_nodes", 256, 4, 8),
        ("one_node", 64, 1, 6), ("one_expert_per_node", 16, 16, 5), ("all_experts_chosen", 12, 4, 12),
        ("top_1", 32, 8, 1), ("more_nodes_than_top_k", 60, 20, 3), ("small_uneven", 6, 3, 4)]


@pytest.mark.parametrize("experts,nodes,top_k", [d[1:] for d in DIST], ids=[d[0] for d in DIST])
def test_distribution(experts, nodes, top_k):
    got, expected = both("nodes_distribution", experts, nodes, top_k)
    check_close(got, expected, rtol=RTOL, atol=1e-12)


def test_distribution_from_simulator_shapes():
    from sim import presets
    m = presets.model("deepseek-v3")
    assert (m.experts, m.experts_per_token) == (256, 8)
    got, expected = both("nodes_distribution", m.experts, 32, m.experts_per_token)
    check_close(got, expected, rtol=RTOL, atol=1e-12)


REACHED = [("limit_one", 256, 8, 8, 1), ("limit_two", 256, 8, 8, 2), ("limit_four", 256, 8, 8, 4),
           ("limit_equals_nodes", 256, 8, 8, 8), ("limit_above_nodes", 256, 8, 8, 100),
           ("limit_equals_top_k_many_nodes", 256, 64, 8, 8), ("limit_just_below_top_k", 256, 64, 8, 7),
           ("one_expert_per_node_limited", 16, 16, 5, 3), ("one_node", 64, 1, 6, 4)]


@pytest.mark.parametrize("experts,nodes,top_k,max_nodes", [r[1:] for r in REACHED], ids=[r[0] for r in REACHED])
def test_nodes_reached(experts, nodes, top_k, max_nodes):
    got, expected = both("nodes_reached", experts, nodes, top_k, max_nodes)
    check_close(got, expected, rtol=RTOL)


def test_step_unlimited():
    got, expected = both("ep_step", 128, **dict(STEP, max_nodes=8))
    check_close(got, expected, rtol=RTOL)


def test_step_prefill_four_nodes():
    got, expected = both("ep_step", 4096, **dict(STEP, nodes=4))
    check_close(got, expected, rtol=RTOL)


def test_step_bf16_dispatch():
    got, expected = both("ep_step", 256, **dict(STEP, dispatch_bytes=2, combine_bytes=2, nic_gbs=25))
    check_close(got, expected, rtol=RTOL)


def test_step_single_node_has_no_network_traffic():
    got, expected = both("ep_step", 64, **dict(STEP, nodes=1))
    check_close(got, expected, rtol=RTOL, atol=1e-12)


def test_step_uneven_scales():
    got, expected = both("ep_step", 1, hidden=1, moe_layers=1, experts=6, nodes=3, top_k=4, max_nodes=2,
                         nic_gbs=0.5, dispatch_bytes=1.5, combine_bytes=0.25)
    check_close(got, expected, rtol=RTOL)


BAD = [
    ("experts", "nodes_distribution", (0, 1, 1), {}),
    ("experts", "nodes_distribution", (256.0, 8, 8), {}),
    ("nodes", "nodes_distribution", (256, 0, 8), {}),
    ("nodes", "nodes_distribution", (256, 3, 8), {}),
    ("nodes", "nodes_distribution", (256, True, 8), {}),
    ("top_k", "nodes_distribution", (256, 8, 0), {}),
    ("top_k", "nodes_distribution", (16, 4, 17), {}),
    ("top_k", "nodes_distribution", (16, 4, 2.0), {}),
    ("max_nodes", "nodes_reached", (256, 8, 8, 0), {}),
    ("max_nodes", "nodes_reached", (256, 8, 8, 4.0), {}),
    ("nodes", "nodes_reached", (256, 7, 8, 4), {}),
    ("top_k", "nodes_reached", (8, 2, 9, 4), {}),
    ("tokens_per_gpu", "ep_step", (0,), STEP),
    ("tokens_per_gpu", "ep_step", (1.5,), STEP),
    ("hidden", "ep_step", (128,), dict(STEP, hidden=0)),
    ("moe_layers", "ep_step", (128,), dict(STEP, moe_layers=0)),
    ("nic_gbs", "ep_step", (128,), dict(STEP, nic_gbs=0)),
    ("nic_gbs", "ep_step", (128,), dict(STEP, nic_gbs=float("inf"))),
    ("dispatch_bytes", "ep_step", (128,), dict(STEP, dispatch_bytes=0)),
    ("dispatch_bytes", "ep_step", (128,), dict(STEP, dispatch_bytes=float("nan"))),
    ("combine_bytes", "ep_step", (128,), dict(STEP, combine_bytes=-2)),
    ("max_nodes", "ep_step", (128,), dict(STEP, max_nodes=0)),
    ("experts", "ep_step", (128,), dict(STEP, experts=0)),
    ("nodes", "ep_step", (128,), dict(STEP, nodes=5)),
    ("top_k", "ep_step", (128,), dict(STEP, top_k=300)),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_smallest():
    got, expected = both("nodes_distribution", 1, 1, 1)
    check_close(got, expected, rtol=RTOL, atol=1e-12)
    got, expected = both("ep_step", 1, hidden=1, moe_layers=1, experts=2, nodes=2, top_k=2, max_nodes=1,
                         nic_gbs=1e-9, dispatch_bytes=1e-9, combine_bytes=1e-9)
    check_close(got, expected, rtol=RTOL)


def _random(n, seed=137):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        nodes = rng.choice([1, 2, 4, 8, 16, 32, 64])
        experts = nodes * rng.randint(1, 16)
        top_k = rng.randint(1, min(experts, 16))
        out.append(dict(experts=experts, nodes=nodes, top_k=top_k, max_nodes=rng.randint(1, 20),
                        tokens=rng.randint(1, 8192), hidden=rng.choice([2048, 4096, 7168]),
                        moe_layers=rng.randint(1, 94), nic_gbs=rng.uniform(10, 100)))
    return out


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    c = RANDOM[index]
    got, expected = both("nodes_distribution", c["experts"], c["nodes"], c["top_k"])
    check_close(got, expected, rtol=RTOL, atol=1e-12)
    got, expected = both("ep_step", c["tokens"], hidden=c["hidden"], moe_layers=c["moe_layers"],
                         experts=c["experts"], nodes=c["nodes"], top_k=c["top_k"], max_nodes=c["max_nodes"],
                         nic_gbs=c["nic_gbs"])
    check_close(got, expected, rtol=RTOL, atol=1e-12)
