"""Hidden cases for 171: nothing to do, scale up from zero, scale down excess new pods (unready first,
larger names first), the surge cap, unavailable at 0 and above, unready old pods always deleted,
unready new pods not counted as ready, scale to zero; converge from several starting points, max_rounds
reached exactly and one short, min_ready; random states vs the reference (and the reference checked:
reconcile is idempotent, a converged state has R ready pods of the desired version)."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def D(r, v="v2", surge=1, unavailable=0):
    return {"replicas": r, "version": v, "max_surge": surge, "max_unavailable": unavailable}


def P(name, ready=True, version=None):
    return {"name": name, "version": version or name.split("-")[0], "ready": ready}


OLD4 = [P(f"v1-{i}") for i in range(4)]


def test_nothing_to_do():
    check_close(*both("reconcile", D(2), [P("v2-a"), P("v2-b")]))


def test_scale_up_from_zero():
    check_close(*both("reconcile", D(3), []))


def test_scale_down_excess_new_unready_first_then_larger_names():
    pods = [P("v2-a"), P("v2-b", False), P("v2-c"), P("v2-d")]
    check_close(*both("reconcile", D(2), pods))
    check_close(*both("reconcile", D(1), pods))


def test_one_excess_new_pod():
    check_close(*both("reconcile", D(2), [P("v2-a"), P("v2-b"), P("v2-c")]))
    check_close(*both("reconcile", D(2, surge=0, unavailable=1), [P("v2-a"), P("v2-b"), P("v2-c"), P("v1-a")]))


def test_scale_to_zero():
    check_close(*both("reconcile", D(0), [P("v2-a"), P("v1-a"), P("v1-b", False)]))


def test_surge_caps_creation():
    check_close(*both("reconcile", D(4, surge=2), OLD4))
    check_close(*both("reconcile", D(4, surge=0, unavailable=1), OLD4))


def test_unavailable_allows_deleting_ready_old():
    check_close(*both("reconcile", D(4, surge=0, unavailable=2), OLD4))
    check_close(*both("reconcile", D(4, surge=1, unavailable=4), OLD4))


def test_unready_new_pods_do_not_count_as_ready():
    pods = [P("v1-0"), P("v1-1"), P("v2-0", False), P("v2-1", False)]
    check_close(*both("reconcile", D(2, surge=2), pods))


def test_ready_new_pods_let_old_ones_go():
    pods = [P("v1-0"), P("v1-1"), P("v2-0"), P("v2-1", False)]
    check_close(*both("reconcile", D(2, surge=2), pods))


def test_unready_old_pods_always_deleted():
    check_close(*both("reconcile", D(2, surge=0, unavailable=1), [P("v1-0", False), P("v1-1", False)]))


def test_several_old_versions():
    pods = [P("v0-0"), P("v1-0"), P("v1-1", False), P("v2-0")]
    check_close(*both("reconcile", D(3), pods))


def test_name_order_is_string_order():
    pods = [P("v1-10"), P("v1-9"), P("v1-2")]
    check_close(*both("reconcile", D(3, surge=0, unavailable=2), pods))
    pods = [P("v2-10"), P("v2-9"), P("v2-2")]
    check_close(*both("reconcile", D(1), pods))


def test_converge_examples():
    check_close(*both("converge", D(4, surge=1, unavailable=1), OLD4, 20))
    check_close(*both("converge", D(4, surge=0, unavailable=1), OLD4, 20))
    check_close(*both("converge", D(4, surge=4, unavailable=0), OLD4, 20))


def test_converge_already_done():
    check_close(*both("converge", D(2), [P("v2-a"), P("v2-b")], 0))


def test_converge_max_rounds_exactly_and_one_short():
    rounds = reference.converge(D(4, surge=1, unavailable=1), OLD4, 50)["rounds"]
    check_close(*both("converge", D(4, surge=1, unavailable=1), OLD4, rounds))
    check_close(*both("converge", D(4, surge=1, unavailable=1), OLD4, rounds - 1))


def test_converge_from_empty_and_to_zero():
    check_close(*both("converge", D(3), [], 10))
    check_close(*both("converge", D(0), OLD4, 10))


def _state(rng):
    versions = ["v0", "v1", "v2"]
    pods = [{"name": f"{rng.choice(versions)}-{i}", "version": "", "ready": rng.random() < 0.7}
            for i in range(rng.randint(0, 8))]
    for p in pods:
        p["version"] = p["name"].split("-")[0]
    surge = rng.randint(0, 3)
    return D(rng.randint(0, 6), "v2", surge, rng.randint(0 if surge else 1, 3)), pods


_rng = random.Random(171)
RANDOM = [_state(_rng) for _ in range(30)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    desired, pods = RANDOM[index]
    got, expected = both("reconcile", desired, pods)
    if reference.reconcile(desired, pods) != expected:
        raise RuntimeError("the reference's reconcile is not idempotent")
    check_close(got, expected)
    got, expected = both("converge", desired, pods, 40)
    if expected["rounds"] >= 0:
        final = expected["pods"]
        if len(final) != desired["replicas"] or any(not n.startswith("v2-") for n in final):
            raise RuntimeError("the reference's converged state is not the desired one")
    check_close(got, expected)


# Cross-key and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("desired", "reconcile", (D(2, surge=0, unavailable=0), [])),
    ("desired", "converge", (D(2, surge=0, unavailable=0), [], 5)),
    ("observed", "reconcile", (D(2), [P("v1-0"), P("v1-0", False)])),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
