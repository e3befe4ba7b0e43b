"""Hidden cases for 180: one built-in platform, none (unspecified), two built-ins (error), an
out-of-tree plugin winning over a built-in, two out-of-tree plugins (error, even with a built-in
active), the allow list filtering only out-of-tree plugins, raising plugins, sorted activated names;
every platform's fallback chain with and without its implementation, custom ops disabled. Exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


def P(name, returns=None, raises=False):
    return {"name": name, "returns": returns, "raises": raises}


CUDA = P("cuda", "vllm.platforms.cuda.CudaPlatform")
CPU = P("cpu", "vllm.platforms.cpu.CpuPlatform")


def test_one_builtin():
    check_close(*both("resolve_platform", [P("tpu"), CUDA, P("rocm")], [], None))


def test_nothing_detected():
    check_close(*both("resolve_platform", [P("tpu"), P("cuda")], [], None))
    check_close(*both("resolve_platform", [], [], None))


def test_two_builtins_is_an_error():
    check_close(*both("resolve_platform", [CPU, CUDA], [], None))


def test_out_of_tree_wins():
    check_close(*both("resolve_platform", [CUDA], [P("gaudi", "vllm_gaudi.HPUPlatform")], None))


def test_two_out_of_tree_is_an_error_even_with_a_builtin():
    check_close(*both("resolve_platform", [CUDA], [P("b", "b.B"), P("a", "a.A")], None))


def test_allow_list_filters_out_of_tree_only():
    plugins = [P("b", "b.B"), P("a", "a.A")]
    check_close(*both("resolve_platform", [CUDA], plugins, ["a"]))
    check_close(*both("resolve_platform", [CUDA], plugins, []))
    check_close(*both("resolve_platform", [CUDA], plugins, ["cuda"]))


def test_raising_plugins_are_not_activated():
    check_close(*both("resolve_platform", [P("cuda", "c.C", True), CPU], [P("x", "x.X", True)], None))


def test_allow_list_with_unknown_names():
    check_close(*both("resolve_platform", [], [P("a", "a.A")], ["zzz", "a"]))


@pytest.mark.parametrize("platform", ["cuda", "rocm", "cpu", "xpu", "tpu", "oot"])
def test_fallback_chains(platform):
    for impls in (["native"], ["native", "cuda"], ["native", "hip"], ["native", "hip", "cuda"], ["cpu", "native"],
                  ["native", "xpu", "tpu", "oot"], ["native", "cuda", "cpu", "xpu", "tpu", "oot", "hip"]):
        check_close(*both("choose_impl", impls, platform, True))


def test_disabled_custom_ops_use_native():
    check_close(*both("choose_impl", ["native", "cuda", "hip"], "cuda", False))
    check_close(*both("choose_impl", ["native", "cpu"], "cpu", False))


def _plugins(rng, prefix):
    return [P(f"{prefix}{i}", rng.choice([None, f"{prefix}.C{i}"]), rng.random() < 0.2) for i in range(rng.randint(0, 4))]


_rng = random.Random(180)
RANDOM = [(_plugins(_rng, "b"), _plugins(_rng, "p"), _rng.choice([None, [], ["p0"], ["p1", "p2"]])) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    check_close(*both("resolve_platform", *RANDOM[index]))


# Cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("builtin", "resolve_platform", ([CUDA, CUDA], [], None)),
    ("plugins", "resolve_platform", ([], [P("a"), P("a", "x.Y")], None)),
    ("impls", "choose_impl", (["cuda"], "cuda", True)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
