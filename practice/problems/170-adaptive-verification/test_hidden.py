"""Hidden cases for 170: memory- and compute-bound steps, the draft term at batch (not batch x (k+1))
tokens, k = 0, ties (free drafts that accept nothing), speculation switching off as the batch grows,
alpha = 1, the estimator's full-acceptance steps, k = 0 steps, decay 1, random cases vs the reference,
and the reference checked against the course simulator (sim.Setup.step_time and
sim.speculative.Speculative). Floats with rtol=1e-9, k exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9

H100_8B = {"params": 8e9, "weight_bytes": 16e9, "kv_bytes_per_token": 131072, "peak_flops": 989e12,
           "bandwidth": 3.35e12, "mfu": 0.5, "step_overhead": 0.0005}
H100_70B_TP8 = {"params": 70e9 / 8, "weight_bytes": 140e9 / 8, "kv_bytes_per_token": 327680 / 8,
                "peak_flops": 989e12, "bandwidth": 3.35e12, "mfu": 0.4, "step_overhead": 0.001}


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


# --- spec_step_s ------------------------------------------------------------------------------

def test_plain_step_is_k_zero():
    check_close(*both("spec_step_s", H100_8B, 1, 500, 0, 0.05), rtol=RTOL)


def test_memory_bound_step_does_not_grow_with_k():
    for k in (1, 4, 8):
        check_close(*both("spec_step_s", H100_8B, 1, 500, k, 0.0), rtol=RTOL)


def test_compute_bound_step_grows_with_k():
    check_close(*both("spec_step_s", H100_8B, 512, 0, 3, 0.0), rtol=RTOL)
    check_close(*both("spec_step_s", H100_8B, 512, 0, 3, 0.1), rtol=RTOL)


def test_draft_term_uses_the_plain_batch():
    # plain step compute-bound only at batch x (k + 1): the draft passes must stay memory-bound
    check_close(*both("spec_step_s", H100_8B, 150, 0, 4, 0.25), rtol=RTOL)


def test_no_overhead_and_no_kv():
    s = dict(H100_8B, step_overhead=0.0, kv_bytes_per_token=0)
    check_close(*both("spec_step_s", s, 64, 10**6, 2, 0.05), rtol=RTOL)


def test_mfu_one():
    check_close(*both("spec_step_s", dict(H100_8B, mfu=1), 1024, 1000, 1, 0.05), rtol=RTOL)


# --- best_k -----------------------------------------------------------------------------------

def test_low_load_speculates():
    check_close(*both("best_k", H100_8B, 1, 500, 0.6, 0.05, 8), rtol=RTOL)


def test_high_load_turns_speculation_off():
    check_close(*both("best_k", H100_8B, 256, 128000, 0.6, 0.05, 8), rtol=RTOL)


def test_k_max_zero():
    check_close(*both("best_k", H100_8B, 1, 500, 0.9, 0.05, 0), rtol=RTOL)


def test_k_max_caps_the_choice():
    check_close(*both("best_k", H100_8B, 1, 500, 0.95, 0.01, 3), rtol=RTOL)


def test_nothing_accepted_free_drafts_tie_to_zero():
    check_close(*both("best_k", H100_8B, 1, 500, 0.0, 0.0, 6), rtol=RTOL)


def test_always_accepted_free_drafts_take_k_max():
    check_close(*both("best_k", H100_8B, 1, 500, 1.0, 0.0, 6), rtol=RTOL)


def test_long_context_keeps_speculation_on():
    check_close(*both("best_k", H100_8B, 64, 64 * 32000, 0.7, 0.05, 8), rtol=RTOL)
    check_close(*both("best_k", H100_8B, 64, 64 * 100, 0.7, 0.05, 8), rtol=RTOL)


def test_every_batch_size_of_a_70b_replica():
    for batch in (1, 8, 32, 64, 96, 128, 192, 256):
        check_close(*both("best_k", H100_70B_TP8, batch, batch * 1500, 0.75, 0.08, 7), rtol=RTOL)


# --- estimate_alpha ---------------------------------------------------------------------------

def test_no_observations():
    check_close(*both("estimate_alpha", [], 0.7, 10, 0.9), rtol=RTOL)


def test_full_acceptance_adds_no_rejection():
    check_close(*both("estimate_alpha", [[4, 4], [4, 4]], 0.5, 2, 1.0), rtol=RTOL)


def test_immediate_rejection():
    check_close(*both("estimate_alpha", [[4, 0], [1, 0]], 0.5, 2, 1.0), rtol=RTOL)


def test_k_zero_steps_change_nothing():
    check_close(*both("estimate_alpha", [[0, 0], [3, 1], [0, 0], [0, 0]], 0.8, 5, 0.5), rtol=RTOL)


def test_one_less_than_k_is_a_rejection():
    check_close(*both("estimate_alpha", [[5, 4]], 0.5, 1, 1.0), rtol=RTOL)


def test_decay_forgets_the_prior():
    obs = [[4, 1]] * 60
    check_close(*both("estimate_alpha", obs, 0.95, 100, 0.8), rtol=RTOL)


def test_prior_alpha_at_both_ends():
    check_close(*both("estimate_alpha", [[2, 1]], 0.0, 3, 0.9), rtol=RTOL)
    check_close(*both("estimate_alpha", [[2, 1]], 1.0, 3, 0.9), rtol=RTOL)


def _setup(rng):
    return {"params": rng.choice([1e9, 8e9, 70e9 / 8, 37e9 / 4]), "weight_bytes": rng.choice([2e9, 16e9, 17.5e9]),
            "kv_bytes_per_token": rng.choice([0, 32768, 131072, 70272]), "peak_flops": rng.choice([312e12, 989e12]),
            "bandwidth": rng.choice([2.0e12, 3.35e12, 4.8e12]), "mfu": rng.uniform(0.2, 0.7),
            "step_overhead": rng.choice([0.0, 0.0005, 0.002])}


def _observations(rng):
    out = []
    for _ in range(rng.randint(0, 30)):
        k = rng.choice([0, 1, 2, 4, 8])
        out.append([k, rng.randint(0, k)])
    return out


_rng = random.Random(170)
RANDOM = [(_setup(_rng), _rng.randint(1, 512), _rng.randint(100, 8000), _rng.uniform(0, 1), _rng.uniform(0, 0.2),
           _rng.randint(0, 10), _observations(_rng)) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    s, batch, per, alpha, cost, k_max, obs = RANDOM[index]
    check_close(*both("best_k", s, batch, batch * per, alpha, cost, k_max), rtol=RTOL)
    check_close(*both("spec_step_s", s, batch, batch * per, k_max, cost), rtol=RTOL)
    check_close(*both("estimate_alpha", obs, alpha, 1 + index, 0.5 + index / 50), rtol=RTOL)


SIM = RANDOM[:10]


@pytest.mark.parametrize("index", range(len(SIM)), ids=[f"{i:02d}" for i in range(len(SIM))])
def test_step_time_matches_sim(index):
    s, batch, per, alpha, cost, k_max, _ = SIM[index]
    k = max(k_max, 1)
    got, expected = both("spec_step_s", s, batch, batch * per, k, cost)
    try:
        from sim import Setup
        from sim.speculative import Speculative
    except ImportError:
        Setup = None
    if Setup is not None:
        setup = Setup(kv_capacity_tokens=10**9, **s)
        sim_s = setup.step_time(batch * (k + 1), batch * per) + k * cost * setup.step_time(batch, batch * per)
        if sim_s != expected:
            raise RuntimeError("the reference's step time differs from sim's")
        if alpha < 1:
            e = Speculative(k=k, alpha=alpha, draft_cost=cost).tokens_per_step()
            mine = sum(alpha ** i for i in range(k + 1))
            if abs(e - mine) > 1e-12 * mine:
                raise RuntimeError("the reference's tokens per step differ from sim's")
    check_close(got, expected, rtol=RTOL)


# Cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("observations", "estimate_alpha", ([[2, 3]], 0.5, 1, 0.9)),
    ("observations", "estimate_alpha", ([[1, 1], [0, 1]], 0.5, 1, 0.9)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
