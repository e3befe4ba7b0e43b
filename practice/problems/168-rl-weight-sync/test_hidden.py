"""Hidden cases for 168: push versus relay on both sides of "the trainer's egress is the limit"
(one instance checked against sim.fleet's peer_gpu cold start), synchronous and asynchronous steps
(rollout longer, training longer, equal), GPUs for one step's tokens (exact multiples), invalid
inputs and random inputs vs the reference. Floats: rtol=1e-9; integers exactly.
"""
import math
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error

RTOL = 1e-9
LINK = dict(sender_gbs=800, receiver_gbs=400)


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


@pytest.mark.parametrize("mode", ["push", "relay"])
@pytest.mark.parametrize("instances", [1, 2, 3, 64], ids=["one", "two_at_egress_limit", "three", "many"])
def test_sync_modes(mode, instances):
    got, expected = both("sync_s", 671e9, instances, mode=mode, latency_s=0.01, **LINK)
    check_close(got, expected, rtol=RTOL)


def test_sync_push_receiver_limited():
    got, expected = both("sync_s", 140e9, 4, mode="push", sender_gbs=3200, receiver_gbs=50)
    check_close(got, expected, rtol=RTOL)


def test_sync_relay_sender_limited():
    got, expected = both("sync_s", 140e9, 4, mode="relay", sender_gbs=25, receiver_gbs=400, latency_s=0.5)
    check_close(got, expected, rtol=RTOL)


def test_sync_zero_latency_default():
    got, expected = both("sync_s", 16e9, 8, mode="relay", sender_gbs=100, receiver_gbs=100)
    check_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("mode", ["push", "relay"])
def test_sync_one_instance_matches_peer_gpu_cold_start(mode):
    from sim.fleet import WEIGHT_SOURCES_GBS, cold_start_s
    gbs = WEIGHT_SOURCES_GBS["peer_gpu"]
    sim_s = cold_start_s(70.6e9, "peer_gpu")
    assert math.isclose(reference.sync_s(70.6e9, 1, mode=mode, sender_gbs=gbs, receiver_gbs=gbs), sim_s,
                        rel_tol=1e-12)
    got = call(submission, "sync_s")(70.6e9, 1, mode=mode, sender_gbs=gbs, receiver_gbs=gbs)
    check_close(got, sim_s, rtol=RTOL)


STEPS = [("sync", 300, 120, 13.43), ("async", 300, 120, 1.84), ("async_training_longer", 100, 250, 2.0),
         ("async_equal", 200, 200, 0), ("sync_no_sync_time", 50, 50, 0)]


@pytest.mark.parametrize("mode,rollout,train,sync", [(s[0].split("_")[0],) + s[1:] for s in STEPS],
                         ids=[s[0] for s in STEPS])
def test_rl_step(mode, rollout, train, sync):
    got, expected = both("rl_step", rollout, train, sync, mode=mode)
    check_close(got, expected, rtol=RTOL)


def test_rl_step_integer_inputs_give_float_step():
    got, expected = both("rl_step", 3, 2, 1, mode="sync")
    check_close(got, expected, rtol=RTOL)
    if not isinstance(got.get("step_s"), float):
        raise Mismatch("type", path="result['step_s']", want="float", got=type(got.get("step_s")).__name__)


GPUS = [("typical", 512, 16, 8000, 2500, 300), ("exact_multiple", 10, 4, 100, 40, 25),
        ("just_over_multiple", 10, 4, 101, 40, 25), ("one_token", 1, 1, 1, 1000, 10), ("fractional_rate", 7, 3, 11, 2.5, 0.7)]


@pytest.mark.parametrize("prompts,samples,out,rate,rollout", [g[1:] for g in GPUS], ids=[g[0] for g in GPUS])
def test_rollout_gpus(prompts, samples, out, rate, rollout):
    got, expected = both("rollout_gpus", prompts, samples, out, tokens_per_s_per_gpu=rate, rollout_s=rollout)
    check_close(got, expected)


BAD = [
    ("weight_bytes", "sync_s", (0, 4), dict(mode="push", **LINK)),
    ("weight_bytes", "sync_s", (float("inf"), 4), dict(mode="push", **LINK)),
    ("instances", "sync_s", (1e9, 0), dict(mode="push", **LINK)),
    ("instances", "sync_s", (1e9, 4.0), dict(mode="relay", **LINK)),
    ("instances", "sync_s", (1e9, True), dict(mode="relay", **LINK)),
    ("mode", "sync_s", (1e9, 4), dict(mode="broadcast", **LINK)),
    ("mode", "sync_s", (1e9, 4), dict(mode="sync", **LINK)),
    ("sender_gbs", "sync_s", (1e9, 4), dict(mode="push", sender_gbs=0, receiver_gbs=1)),
    ("sender_gbs", "sync_s", (1e9, 4), dict(mode="push", sender_gbs=float("nan"), receiver_gbs=1)),
    ("receiver_gbs", "sync_s", (1e9, 4), dict(mode="relay", sender_gbs=1, receiver_gbs=-1)),
    ("latency_s", "sync_s", (1e9, 4), dict(mode="relay", latency_s=-0.001, **LINK)),
    ("latency_s", "sync_s", (1e9, 4), dict(mode="relay", latency_s=float("inf"), **LINK)),
    ("rollout_s", "rl_step", (0, 1, 1), dict(mode="sync")),
    ("rollout_s", "rl_step", (float("inf"), 1, 1), dict(mode="sync")),
    ("train_s", "rl_step", (1, 0, 1), dict(mode="async")),
    ("train_s", "rl_step", (1, -3, 1), dict(mode="async")),
    ("sync_s", "rl_step", (1, 1, -1), dict(mode="sync")),
    ("sync_s", "rl_step", (1, 1, float("nan")), dict(mode="sync")),
    ("mode", "rl_step", (1, 1, 1), dict(mode="push")),
    ("mode", "rl_step", (1, 1, 1), dict(mode=None)),
    ("prompts", "rollout_gpus", (0, 1, 1), dict(tokens_per_s_per_gpu=1, rollout_s=1)),
    ("samples_per_prompt", "rollout_gpus", (1, 0, 1), dict(tokens_per_s_per_gpu=1, rollout_s=1)),
    ("output_len", "rollout_gpus", (1, 1, 2.5), dict(tokens_per_s_per_gpu=1, rollout_s=1)),
    ("tokens_per_s_per_gpu", "rollout_gpus", (1, 1, 1), dict(tokens_per_s_per_gpu=0, rollout_s=1)),
    ("rollout_s", "rollout_gpus", (1, 1, 1), dict(tokens_per_s_per_gpu=1, rollout_s=0)),
    ("rollout_s", "rollout_gpus", (1, 1, 1), dict(tokens_per_s_per_gpu=1, rollout_s=float("inf"))),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_zero_latency_and_sync():
    got, expected = both("sync_s", 1.0, 1, mode="push", sender_gbs=1e-9, receiver_gbs=1e-9, latency_s=0)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("rl_step", 1e-9, 1e-9, 0, mode="async")
    check_close(got, expected, rtol=RTOL)


def _random(n, seed=168):
    rng = random.Random(seed)
    return [dict(w=rng.uniform(1e9, 2e12), instances=rng.randint(1, 128), mode=rng.choice(["push", "relay"]),
                 sender=rng.uniform(25, 6400), receiver=rng.uniform(25, 800), latency=rng.uniform(0, 0.05),
                 rollout=rng.uniform(10, 2000), train=rng.uniform(10, 2000), step_mode=rng.choice(["sync", "async"]),
                 prompts=rng.randint(1, 4096), samples=rng.randint(1, 64), out=rng.randint(1, 32768),
                 rate=rng.uniform(100, 20000))
            for _ in range(n)]


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    c = RANDOM[index]
    got, expected = both("sync_s", c["w"], c["instances"], mode=c["mode"], sender_gbs=c["sender"],
                         receiver_gbs=c["receiver"], latency_s=c["latency"])
    check_close(got, expected, rtol=RTOL)
    got, expected = both("rl_step", c["rollout"], c["train"], expected, mode=c["step_mode"])
    check_close(got, expected, rtol=RTOL)
    got, expected = both("rollout_gpus", c["prompts"], c["samples"], c["out"], tokens_per_s_per_gpu=c["rate"],
                         rollout_s=c["rollout"])
    check_close(got, expected)
