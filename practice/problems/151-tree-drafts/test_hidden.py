"""Hidden cases for 151: masks and depths of chains, stars and forests; greedy verification that takes
the first matching child, stops at a leaf, accepts nothing, walks a whole chain; best trees that grow a
chain or a star, break ties by creation order, stop siblings past the last rank, size 0; random cases vs
the reference, and the reference checked: its tree has the largest expected tokens among all trees of
that size (brute force on small cases). Integers exactly, expected tokens with rtol=1e-9."""
import itertools
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

RTOL = 1e-9


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def N(parent, token):
    return {"parent": parent, "token": token}


# --- tree_attention ---------------------------------------------------------------------------

def test_empty_tree():
    check_close(*both("tree_attention", []))


def test_chain_is_causal():
    check_close(*both("tree_attention", [-1, 0, 1, 2]))


def test_star_siblings_do_not_see_each_other():
    check_close(*both("tree_attention", [-1, 0, 0, 0]))


def test_forest_of_roots():
    check_close(*both("tree_attention", [-1, -1, -1]))


def test_deep_branch_after_siblings():
    check_close(*both("tree_attention", [-1, 0, -1, 1, 2, 3, 0, 6]))


# --- verify_greedy ----------------------------------------------------------------------------

def test_empty_tree_gives_only_the_bonus():
    check_close(*both("verify_greedy", [], [42]))


def test_nothing_accepted():
    check_close(*both("verify_greedy", [N(-1, 1), N(-1, 2)], [3, 0, 0]))


def test_whole_chain_accepted_plus_bonus():
    check_close(*both("verify_greedy", [N(-1, 1), N(0, 2), N(1, 3)], [1, 2, 3, 4]))


def test_second_root_child_accepted():
    check_close(*both("verify_greedy", [N(-1, 1), N(-1, 2), N(1, 5), N(0, 5)], [2, 5, 6, 7, 8]))


def test_first_matching_child_wins_on_duplicates():
    check_close(*both("verify_greedy", [N(-1, 4), N(-1, 4), N(1, 6), N(0, 7)], [4, 7, 6, 0, 0]))


def test_target_entries_of_other_branches_are_ignored():
    check_close(*both("verify_greedy", [N(-1, 1), N(-1, 2), N(0, 3), N(1, 4)], [2, 3, 4, 9, 9]))


def test_stops_at_a_leaf():
    check_close(*both("verify_greedy", [N(-1, 1), N(0, 2), N(0, 3)], [1, 3, 8, 9]))


def test_token_zero():
    check_close(*both("verify_greedy", [N(-1, 0), N(0, 0)], [0, 0, 0]))


# --- best_tree --------------------------------------------------------------------------------

def test_size_zero():
    check_close(*both("best_tree", [0.5, 0.25], 0), rtol=RTOL)


def test_size_one():
    check_close(*both("best_tree", [0.5, 0.25], 1), rtol=RTOL)


def test_single_rank_is_a_chain():
    check_close(*both("best_tree", [0.75], 5), rtol=RTOL)


def test_confident_draft_grows_a_chain():
    check_close(*both("best_tree", [0.875, 0.0625], 6), rtol=RTOL)


def test_flat_probabilities_grow_a_star():
    check_close(*both("best_tree", [0.25, 0.25, 0.25, 0.25], 4), rtol=RTOL)
    check_close(*both("best_tree", [0.25, 0.25, 0.25, 0.25], 7), rtol=RTOL)


def test_tie_goes_to_the_earliest_created():
    check_close(*both("best_tree", [0.5, 0.25, 0.125], 4), rtol=RTOL)
    check_close(*both("best_tree", [0.5, 0.5], 5), rtol=RTOL)


def test_strictly_larger_later_candidate_wins():
    check_close(*both("best_tree", [0.5, 0.375], 3), rtol=RTOL)


def test_no_sibling_past_the_last_rank():
    check_close(*both("best_tree", [0.5, 0.5], 8), rtol=RTOL)


def test_probability_one():
    check_close(*both("best_tree", [1.0], 4), rtol=RTOL)


def test_large_tree():
    check_close(*both("best_tree", [0.625, 0.1875, 0.0625, 0.03125], 64), rtol=RTOL)


def _tree_value(parents, ranks, q):
    values = []
    for p, r in zip(parents, ranks):
        values.append((values[p] if p >= 0 else 1.0) * q[r])
    return 1.0 + sum(values)


def _all_trees(n, k):
    """Every tree of n nodes where siblings take ranks 0, 1, ... in order (at most k children)."""
    def grow(parents, ranks):
        if len(parents) == n:
            yield list(parents), list(ranks)
            return
        for p in range(-1, len(parents)):
            used = sum(1 for x in parents if x == p)
            if used < k:
                yield from grow(parents + [p], ranks + [used])
    yield from grow([], [])


def test_greedy_is_optimal_by_brute_force():
    for q, n in (([0.5, 0.25, 0.125], 5), ([0.625, 0.25], 5), ([0.375, 0.3125, 0.25], 4)):
        expected = reference.best_tree(q, n)
        best = max(_tree_value(p, r, q) for p, r in _all_trees(n, len(q)))
        if abs(best - expected["expected_tokens"]) > 1e-12:
            raise RuntimeError("the reference's greedy tree is not optimal")
        check_close(call(submission, "best_tree")(q, n), expected, rtol=RTOL)


def _probs(rng):
    k = rng.randint(1, 5)
    units = sorted((rng.randint(1, 16) for _ in range(k)), reverse=True)
    while sum(units) > 32:
        units = [max(1, u - 1) for u in units]
    return [u / 32 for u in units]


def _nodes(rng):
    n = rng.randint(0, 12)
    nodes = [N(rng.randint(-1, i - 1), rng.randint(0, 3)) for i in range(n)]
    return nodes, [rng.randint(0, 3) for _ in range(n + 1)]


_rng = random.Random(151)
RANDOM = [(_probs(_rng), _rng.randint(0, 30), _nodes(_rng)) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    q, size, (nodes, target) = RANDOM[index]
    check_close(*both("best_tree", q, size), rtol=RTOL)
    check_close(*both("verify_greedy", nodes, target))
    check_close(*both("tree_attention", [x["parent"] for x in nodes]))


# Cross-item and cross-field rules only; the declared domains are covered by the generated cases.
BAD = [
    ("parents", "tree_attention", ([0],)),
    ("parents", "tree_attention", ([-1, 1],)),
    ("parents", "tree_attention", ([-1, 0, 3, 1],)),
    ("nodes", "verify_greedy", ([N(0, 1)], [1, 1])),
    ("nodes", "verify_greedy", ([N(-1, 1), N(2, 1), N(0, 1)], [1, 1, 1, 1])),
    ("target", "verify_greedy", ([N(-1, 1)], [1])),
    ("target", "verify_greedy", ([N(-1, 1)], [1, 2, 3])),
    ("target", "verify_greedy", ([], [1, 2])),
    ("rank_probs", "best_tree", ([0.25, 0.5], 3)),
    ("rank_probs", "best_tree", ([0.5, 0.5, 0.125], 3)),
    ("rank_probs", "best_tree", ([1.0, 0.0625], 3)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
