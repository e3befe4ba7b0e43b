"""Hidden cases for 163: step times with and without MTP, zero fixed cost, zero MTP cost, deeper MTP,
alpha at 0 and 1; the SLO met exactly (accepted) and missed by a hair, no batch fitting, max_batch
binding, random cases vs the reference. Batches exactly, floats with rtol=1e-9."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9
DS = (0.015, 0.0001, 1 / 61)


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def test_step_without_mtp():
    check_close(*both("mtp_step_s", 128, 0, *DS), rtol=RTOL)


def test_step_with_mtp():
    check_close(*both("mtp_step_s", 128, 1, *DS), rtol=RTOL)
    check_close(*both("mtp_step_s", 1, 3, *DS), rtol=RTOL)


def test_step_zero_fixed_and_zero_mtp_cost():
    check_close(*both("mtp_step_s", 64, 2, 0.0, 2e-4, 0.0), rtol=RTOL)
    check_close(*both("mtp_step_s", 64, 2, 0.0, 2e-4, 0.5), rtol=RTOL)


def test_rate_alpha_extremes():
    check_close(*both("mtp_rate", 32, 2, 0.0, *DS), rtol=RTOL)
    check_close(*both("mtp_rate", 32, 2, 1.0, *DS), rtol=RTOL)


def test_rate_compute_bound_mtp_loses():
    check_close(*both("mtp_rate", 256, 1, 0.85, 0.0, 1e-4, 1 / 61), rtol=RTOL)
    check_close(*both("mtp_rate", 256, 0, 0.85, 0.0, 1e-4, 1 / 61), rtol=RTOL)


def test_rate_deep_mtp():
    for depth in range(0, 5):
        check_close(*both("mtp_rate", 96, depth, 0.7, *DS), rtol=RTOL)


def test_best_batch_example_without_mtp():
    check_close(*both("best_batch", 0.025, 0, 0.85, *DS, 512), rtol=RTOL)


def test_best_batch_slo_met_exactly_is_accepted():
    # alpha 0, no MTP cost: TPOT = 2^-6 + 2^-12 x b, exactly 2^-5 at b = 64
    check_close(*both("best_batch", 2.0 ** -5, 0, 0.0, 2.0 ** -6, 2.0 ** -12, 0.0, 1000), rtol=RTOL)
    # alpha 1, depth 1: TPOT = (2^-6 + 2^-12 x 2b) / 2, exactly 2^-6 at b = 32
    check_close(*both("best_batch", 2.0 ** -6, 1, 1.0, 2.0 ** -6, 2.0 ** -12, 0.0, 1000), rtol=RTOL)


def test_best_batch_slo_missed_by_a_hair():
    check_close(*both("best_batch", 2.0 ** -5 * (1 - 1e-12), 0, 0.0, 2.0 ** -6, 2.0 ** -12, 0.0, 1000), rtol=RTOL)


def test_best_batch_nothing_fits():
    check_close(*both("best_batch", 0.01, 1, 0.85, *DS, 512), rtol=RTOL)


def test_best_batch_max_batch_binds():
    check_close(*both("best_batch", 1.0, 1, 0.85, *DS, 7), rtol=RTOL)
    check_close(*both("best_batch", 1.0, 1, 0.85, *DS, 1), rtol=RTOL)


def test_best_batch_deeper_mtp():
    for depth in (1, 2, 3):
        check_close(*both("best_batch", 0.03, depth, 0.8, *DS, 2000), rtol=RTOL)


_rng = random.Random(163)
RANDOM = [(_rng.uniform(0.01, 0.08), _rng.randint(0, 3), _rng.uniform(0, 1), _rng.uniform(0, 0.03),
           _rng.uniform(2e-5, 4e-4), _rng.choice([0.0, 1 / 61, 1 / 30, 0.1]), _rng.randint(1, 1500),
           _rng.randint(1, 600)) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    slo, depth, alpha, fixed, per, frac, max_batch, batch = RANDOM[index]
    check_close(*both("best_batch", slo, depth, alpha, fixed, per, frac, max_batch), rtol=RTOL)
    check_close(*both("mtp_rate", batch, depth, alpha, fixed, per, frac), rtol=RTOL)
    check_close(*both("mtp_step_s", batch, depth, fixed, per, frac), rtol=RTOL)
