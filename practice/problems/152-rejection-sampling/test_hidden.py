"""Hidden cases for 152: the acceptance test and the weighted draw exactly on their boundaries, the
all-zero residual, certain acceptance and rejection, k = 0, one-token vocabularies, random rounds
over many seeds vs the reference, expected acceptance (checked against 150's closed form and
against the reference's own rounds), and invalid inputs. The reference itself is checked to be an
exact sampler: over thousands of seeds its first token follows p[0]."""
import math
import random

import numpy as np
import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def first_draw(seed):
    return float(np.random.default_rng(seed).random())


def first_seed(condition):
    seed = 0
    while not condition(first_draw(seed)):
        seed += 1
    return seed


# --- the acceptance test u < p / q --------------------------------------------------------------

U0 = first_draw(0)                                   # about 0.637


def test_draw_equal_to_the_ratio_is_rejected():
    # p/q = (U0 / 2) / 0.5 is exactly U0: "u < p/q" is false
    a = U0 / 2
    check_close(*both("verify", [[a, 1 - a], [0.5, 0.5]], [[0.5, 0.5]], [0], 0))


def test_draw_just_below_the_ratio_is_accepted():
    a = math.nextafter(U0 / 2, 1.0)
    check_close(*both("verify", [[a, 1 - a], [0.5, 0.5]], [[0.5, 0.5]], [0], 0))


def test_ratio_above_one_always_accepts():
    p = [[0.1, 0.9], [0.2, 0.8], [0.6, 0.4]]
    q = [[0.5, 0.5], [0.7, 0.3]]
    for seed in range(6):
        check_close(*both("verify", p, q, [1, 1], seed))


def test_zero_target_probability_always_rejects():
    p = [[0.0, 0.3, 0.7], [0.2, 0.3, 0.5]]
    q = [[0.4, 0.4, 0.2]]
    for seed in range(6):
        check_close(*both("verify", p, q, [0], seed))


def test_identical_distributions_accept_everything():
    p = [[0.25, 0.75]] * 4
    for seed in range(4):
        check_close(*both("verify", p, p[:3], [1, 0, 1], seed))


# --- the weighted draw u * R < c_j ------------------------------------------------------------

def test_draw_exactly_on_a_cumulative_sum_takes_the_next_token():
    # k = 0: the bonus token from p[0] = [U0, 1 - U0]; c_0 = U0 = u * R (R is exactly 1)
    check_close(*both("verify", [[U0, 1 - U0]], [], [], 0))


def test_draw_just_below_a_cumulative_sum_takes_that_token():
    a = math.nextafter(U0, 1.0)
    check_close(*both("verify", [[a, 1 - a]], [], [], 0))


def test_zero_weight_tokens_are_never_drawn():
    p = [[0.0, 0.0, 0.5, 0.0, 0.5, 0.0]]
    for seed in range(8):
        check_close(*both("verify", p, [], [], seed))


def test_unnormalised_residual_is_drawn_by_its_own_total():
    p = [[0.05, 0.55, 0.1, 0.3], [0.25, 0.25, 0.25, 0.25]]
    q = [[0.4, 0.1, 0.3, 0.2]]
    for seed in range(12):
        check_close(*both("verify", p, q, [0], seed))


HIGH = first_seed(lambda u: u >= 0.9995)


def test_all_zero_residual_falls_back_to_p():
    # p <= q everywhere (p sums to 1 - 5e-7): a rejection leaves no residual, so draw from p itself
    p = [[0.0009995, 0.999], [0.5, 0.5]]
    q = [[0.001, 0.999]]
    check_close(*both("verify", p, q, [0], HIGH))


def test_no_draft_only_the_bonus_token():
    check_close(*both("verify", [[0.2, 0.3, 0.5]], [], [], 3))


def test_one_token_vocabulary():
    check_close(*both("verify", [[1.0], [1.0], [1.0]], [[1.0], [1.0]], [0, 0], 9))


def test_last_token_of_the_vocabulary_as_draft():
    p = [[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [1.0, 0.0, 0.0]]
    q = [[0.2, 0.2, 0.6], [0.1, 0.1, 0.8]]
    for seed in range(10):
        check_close(*both("verify", p, q, [2, 2], seed))


def test_row_sums_within_tolerance_are_accepted():
    p = [[0.5, 0.5 + 9e-7], [0.5, 0.5]]
    q = [[0.5 - 9e-7, 0.5]]
    for seed in range(4):
        check_close(*both("verify", p, q, [0], seed))
    check_close(*both("expected_accepted", p, q), rtol=RTOL)


def test_large_seed():
    p = [[0.3, 0.7], [0.6, 0.4]]
    q = [[0.5, 0.5]]
    check_close(*both("verify", p, q, [1], 2**63 + 12345))


# --- random rounds --------------------------------------------------------------------------

def _dist(rng, vocab):
    w = [rng.random() ** 2 if rng.random() < 0.8 else 0.0 for _ in range(vocab)]
    if sum(w) == 0:
        w[rng.randrange(vocab)] = 1.0
    total = sum(w)
    return [x / total for x in w]


def _round(seed):
    rng = random.Random(seed)
    vocab, k = rng.randint(1, 8), rng.randint(0, 5)
    q = [_dist(rng, vocab) for _ in range(k)]
    # a target close to the draft (high acceptance) or unrelated (low acceptance)
    p = []
    for i in range(k + 1):
        mine = _dist(rng, vocab)
        if i < k and rng.random() < 0.6:
            lam = rng.random()
            mine = [lam * a + (1 - lam) * b for a, b in zip(q[i], mine)]
        p.append(mine)
    draft = [rng.choices(range(vocab), weights=row)[0] for row in q]
    return p, q, draft


RANDOM = [_round(152_000 + i) for i in range(15)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    p, q, draft = RANDOM[index]
    for seed in range(index * 40, index * 40 + 12):
        check_close(*both("verify", p, q, draft, seed))
    check_close(*both("expected_accepted", p, q), rtol=RTOL)


# --- expected acceptance ----------------------------------------------------------------------

def test_expected_with_no_draft_is_zero():
    check_close(*both("expected_accepted", [[0.5, 0.5]], []), rtol=RTOL)


def test_expected_identical_is_k():
    p = [[0.1, 0.9]] * 5
    check_close(*both("expected_accepted", p, p[:4]), rtol=RTOL)


def test_expected_disjoint_is_zero():
    check_close(*both("expected_accepted", [[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]), rtol=RTOL)


def test_expected_position_dependent():
    p = [[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.9, 0.05, 0.05], [0.2, 0.2, 0.6]]
    q = [[0.3, 0.5, 0.2], [0.25, 0.25, 0.5], [0.1, 0.1, 0.8]]
    check_close(*both("expected_accepted", p, q), rtol=RTOL)


@pytest.mark.parametrize("alpha,k", [(0.8, 4), (0.35, 7), (0.6, 1)], ids=["a080_k4", "a035_k7", "a060_k1"])
def test_expected_constant_alpha_is_150s_closed_form(alpha, k):
    p = [[alpha, 1 - alpha, 0.0]] * (k + 1)
    q = [[alpha, 0.0, 1 - alpha]] * k                  # sum of min(p, q) = alpha at every position
    got, expected = both("expected_accepted", p, q)
    closed = sum(alpha ** i for i in range(1, k + 1))  # 150's expected_tokens(alpha, k) - 1
    if not math.isclose(expected, closed, rel_tol=1e-12):
        raise RuntimeError("the reference differs from 150's closed form")
    check_close(got, expected, rtol=RTOL)


def test_reference_is_an_exact_sampler():
    """Over many seeds the reference's first token follows p[0], and its mean accepted length
    matches expected_accepted (draft tokens drawn from q): the two facts rejection sampling
    promises. Then the learner's rounds are compared on a sample of those seeds."""
    p = [[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6]]
    q = [[0.3, 0.5, 0.2], [0.25, 0.25, 0.5]]
    rng = random.Random(152)
    n, first, accepted, rounds = 4000, [0, 0, 0], 0, []
    for seed in range(n):
        draft = [rng.choices(range(3), weights=row)[0] for row in q]
        r = reference.verify(p, q, draft, seed)
        first[r["tokens"][0]] += 1
        accepted += r["accepted"]
        rounds.append((draft, seed))
    for j in range(3):                                  # within 5 standard deviations
        sd = math.sqrt(p[0][j] * (1 - p[0][j]) / n)
        if abs(first[j] / n - p[0][j]) > 5 * sd:
            raise RuntimeError("the reference's first token does not follow p[0]")
    if abs(accepted / n - reference.expected_accepted(p, q)) > 5 * math.sqrt(1.0 / n):
        raise RuntimeError("the reference's mean accepted length differs from expected_accepted")
    for draft, seed in rounds[:: n // 25]:
        check_close(*both("verify", p, q, draft, seed))


# --- invalid inputs ---------------------------------------------------------------------------

P2 = [[0.5, 0.5], [0.5, 0.5]]
Q1 = [[0.5, 0.5]]

BAD = [
    ("p", "verify", ("no", Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5], []], Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5], [1.0]], Q1, [0], 0)),
    ("p", "verify", ([[1.5, -0.5], [0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[float("nan"), 1.0], [0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5 + 1.1e-6], [0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5 - 1.1e-6], [0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[True, False], [0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5]], Q1, [0], 0)),
    ("p", "verify", ([[0.5, 0.5]] * 3, Q1, [0], 0)),
    ("p", "verify", ([(0.5, 0.5), [0.5, 0.5]], Q1, [0], 0)),
    ("q", "verify", (P2, "no", [0], 0)),
    ("q", "verify", (P2, [[0.3, 0.3, 0.4]], [0], 0)),
    ("q", "verify", (P2, [[0.7, 0.7]], [0], 0)),
    ("q", "verify", (P2, [[float("inf"), 0.0]], [0], 0)),
    ("q", "verify", (P2, [[-0.1, 1.1]], [0], 0)),
    ("draft", "verify", (P2, Q1, (0,), 0)),
    ("draft", "verify", (P2, Q1, [], 0)),
    ("draft", "verify", (P2, Q1, [2], 0)),
    ("draft", "verify", (P2, Q1, [-1], 0)),
    ("draft", "verify", (P2, Q1, [1.0], 0)),
    ("draft", "verify", (P2, Q1, [True], 0)),
    ("draft", "verify", (P2, [[1.0, 0.0]], [1], 0)),
    ("seed", "verify", (P2, Q1, [0], -1)),
    ("seed", "verify", (P2, Q1, [0], 1.5)),
    ("seed", "verify", (P2, Q1, [0], True)),
    ("p", "expected_accepted", ([[0.5, 0.6], [0.5, 0.5]], Q1)),
    ("p", "expected_accepted", (Q1, Q1)),
    ("q", "expected_accepted", (P2, [[0.2, 0.2]])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
