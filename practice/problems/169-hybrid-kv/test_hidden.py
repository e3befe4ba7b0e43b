"""Hidden cases for 169: bytes per layer-token (checked against sim.presets.kv_bytes_per_token),
each layer kind on both sides of its window / top_k, the longest context that fits (exact fits,
one byte short, nothing fits, everything fits, huge answers), invalid inputs and random inputs.
Floats: rtol=1e-9; integers and None exactly.
"""
import random

import pytest

import reference
import submission
from judgekit import Mismatch, call, check_close, expect_value_error

RTOL = 1e-9
FULL = {"kind": "full", "count": 2, "bytes_per_token": 100}
WIN = {"kind": "window", "count": 3, "bytes_per_token": 50, "window": 8}
SPARSE = {"kind": "sparse", "count": 4, "bytes_per_token": 20, "top_k": 5, "index_bytes_per_token": 3}


def both(name, *args, **kwargs):
    expected = getattr(reference, name)(*args, **kwargs)
    got = call(submission, name)(*args, **kwargs)
    return got, expected


def check_optional(got, expected):
    if expected is None:
        if got is not None:
            raise Mismatch("exact", path="result")
    else:
        check_close(got, expected)


# --- layer_bytes_per_token ---------------------------------------------------------------------

def test_layer_gqa():
    got, expected = both("layer_bytes_per_token", "gqa", dtype_bytes=2, kv_heads=8, head_dim=128)
    check_close(got, expected, rtol=RTOL)


def test_layer_mla():
    got, expected = both("layer_bytes_per_token", "mla", dtype_bytes=1, kv_rank=512, rope_dim=64)
    check_close(got, expected, rtol=RTOL)


def test_layer_mla_without_rope_half_byte():
    got, expected = both("layer_bytes_per_token", "mla", dtype_bytes=0.5, kv_rank=256, rope_dim=0)
    check_close(got, expected, rtol=RTOL)


def test_layer_gqa_ignores_mla_arguments():
    got, expected = both("layer_bytes_per_token", "gqa", dtype_bytes=1, kv_heads=1, head_dim=64, kv_rank=-5,
                         rope_dim=-1)
    check_close(got, expected, rtol=RTOL)


def test_layer_mla_rope_defaults_to_zero():
    got, expected = both("layer_bytes_per_token", "mla", dtype_bytes=1, kv_rank=512)
    check_close(got, expected, rtol=RTOL)


def test_layer_gqa_needs_kv_heads():
    expect_value_error(call(submission, "layer_bytes_per_token"), "gqa", dtype_bytes=2, head_dim=128,
                       field="kv_heads")


def test_layer_gqa_needs_head_dim():
    expect_value_error(call(submission, "layer_bytes_per_token"), "gqa", dtype_bytes=2, kv_heads=8,
                       field="head_dim")


def test_layer_mla_needs_kv_rank():
    expect_value_error(call(submission, "layer_bytes_per_token"), "mla", dtype_bytes=1, rope_dim=64,
                       field="kv_rank")


def test_layer_mla_ignores_gqa_arguments():
    got, expected = both("layer_bytes_per_token", "mla", dtype_bytes=2, kv_rank=1, kv_heads=-1, head_dim=0)
    check_close(got, expected, rtol=RTOL)


SIM = [("llama-3-70b", "bf16"), ("llama-3-70b", "fp8"), ("llama-3-8b", "fp8"), ("deepseek-v3", "fp8"),
       ("deepseek-v3", "bf16"), ("qwen2.5-7b", "bf16")]


@pytest.mark.parametrize("model,dtype", SIM, ids=[f"{m}_{d}" for m, d in SIM])
def test_layer_bytes_match_simulator(model, dtype):
    from sim import presets
    m = presets.model(model)
    size = presets.DTYPE_BYTES[dtype]
    if m.kv_lora_rank:
        kwargs = dict(dtype_bytes=size, kv_rank=m.kv_lora_rank, rope_dim=m.rope_dim)
        attention = "mla"
    else:
        kwargs = dict(dtype_bytes=size, kv_heads=m.kv_heads, head_dim=m.head_dim)
        attention = "gqa"
    sim_bytes = presets.kv_bytes_per_token(m, 1, dtype)
    assert reference.layer_bytes_per_token(attention, **kwargs) * m.layers == sim_bytes
    got = call(submission, "layer_bytes_per_token")(attention, **kwargs)
    check_close(got * m.layers if isinstance(got, (int, float)) and not isinstance(got, bool) else got,
                float(sim_bytes), rtol=RTOL)


# --- kv_bytes ----------------------------------------------------------------------------------

KV = [
    ("full_only", 1000, [FULL]),
    ("zero_context", 0, [FULL, WIN, SPARSE]),
    ("window_shorter_context", 7, [WIN]),
    ("window_exactly_full", 8, [WIN]),
    ("window_past_full", 9, [WIN]),
    ("sparse_below_top_k", 4, [SPARSE]),
    ("sparse_at_top_k", 5, [SPARSE]),
    ("sparse_past_top_k", 6, [SPARSE]),
    ("sparse_no_index", 100, [dict(SPARSE, index_bytes_per_token=0)]),
    ("all_three_long", 1_000_000, [FULL, SPARSE, WIN]),
    ("two_windows", 20, [WIN, dict(WIN, window=16, count=1)]),
    ("float_bytes", 333, [dict(FULL, bytes_per_token=70.5), dict(SPARSE, index_bytes_per_token=0.25)]),
]


@pytest.mark.parametrize("context,layers", [c[1:] for c in KV], ids=[c[0] for c in KV])
def test_kv_bytes(context, layers):
    got, expected = both("kv_bytes", context, layers)
    check_close(got, expected, rtol=RTOL)


def test_kv_bytes_tuple_of_groups():
    got, expected = both("kv_bytes", 50, (FULL, WIN))
    check_close(got, expected, rtol=RTOL)


# --- max_context -------------------------------------------------------------------------------

MAX = [
    ("exact_fit", 200 * 12345, [FULL]),
    ("one_byte_short", 200 * 12345 - 1, [FULL]),
    ("exact_fit_at_power_of_two", 200 * 1024, [FULL]),
    ("exact_fit_at_two", 400, [FULL]),
    ("nothing_fits", 199, [FULL]),
    ("exactly_one_token", 200, [FULL]),
    ("zero_budget", 0, [FULL]),
    ("zero_budget_window_only", 0, [WIN]),
    ("window_only_everything_fits", 10**6, [WIN]),
    ("window_only_exactly_full_fits", 3 * 50 * 8, [WIN]),
    ("window_only_one_byte_short", 3 * 50 * 8 - 1, [WIN]),
    ("two_windows_longest_decides", 3 * 50 * 8 + 16 * 50 - 1, [WIN, dict(WIN, window=16, count=1)]),
    ("two_windows_all_fit", 3 * 50 * 8 + 16 * 50, [WIN, dict(WIN, window=16, count=1)]),
    ("window_plus_full", 10**6, [WIN, FULL]),
    ("sparse_stores_index_too", 4 * 23 * 777, [SPARSE]),
    ("sparse_one_byte_short", 4 * 23 * 777 - 1, [SPARSE]),
    ("huge_answer", 1e15, [{"kind": "full", "count": 1, "bytes_per_token": 1}]),
    ("deepseek_like_80gb", 80e9, [{"kind": "sparse", "count": 61, "bytes_per_token": 576, "top_k": 2048,
                                   "index_bytes_per_token": 128}]),
    ("mixed_example_80gb", 80e9, [{"kind": "full", "count": 8, "bytes_per_token": 576},
                                  {"kind": "sparse", "count": 8, "bytes_per_token": 576, "top_k": 2048,
                                   "index_bytes_per_token": 128},
                                  {"kind": "window", "count": 32, "bytes_per_token": 2048, "window": 4096}]),
    ("budget_inside_window_ramp", 3 * 50 * 5 + 2 * 100 * 5, [WIN, FULL]),
]


@pytest.mark.parametrize("budget,layers", [c[1:] for c in MAX], ids=[c[0] for c in MAX])
def test_max_context(budget, layers):
    got, expected = both("max_context", budget, layers)
    check_optional(got, expected)


BAD = [
    ("attention", "layer_bytes_per_token", ("mha",), dict(dtype_bytes=2, kv_heads=8, head_dim=128)),
    ("attention", "layer_bytes_per_token", (None,), dict(dtype_bytes=2, kv_heads=8, head_dim=128)),
    ("dtype_bytes", "layer_bytes_per_token", ("gqa",), dict(dtype_bytes=0, kv_heads=8, head_dim=128)),
    ("dtype_bytes", "layer_bytes_per_token", ("mla",), dict(dtype_bytes=float("inf"), kv_rank=512)),
    ("dtype_bytes", "layer_bytes_per_token", ("mla",), dict(dtype_bytes=True, kv_rank=512)),
    ("kv_heads", "layer_bytes_per_token", ("gqa",), dict(dtype_bytes=2, kv_heads=0, head_dim=128)),
    ("kv_heads", "layer_bytes_per_token", ("gqa",), dict(dtype_bytes=2, kv_heads=8.0, head_dim=128)),
    ("head_dim", "layer_bytes_per_token", ("gqa",), dict(dtype_bytes=2, kv_heads=8, head_dim=0)),
    ("kv_rank", "layer_bytes_per_token", ("mla",), dict(dtype_bytes=1, kv_rank=0, rope_dim=64)),
    ("rope_dim", "layer_bytes_per_token", ("mla",), dict(dtype_bytes=1, kv_rank=512, rope_dim=-1)),
    ("rope_dim", "layer_bytes_per_token", ("mla",), dict(dtype_bytes=1, kv_rank=512, rope_dim=True)),
    ("context", "kv_bytes", (-1, [FULL]), {}),
    ("context", "kv_bytes", (10.0, [FULL]), {}),
    ("context", "kv_bytes", (True, [FULL]), {}),
    ("layers", "kv_bytes", (10, []), {}),
    ("layers", "kv_bytes", (10, "full"), {}),
    ("layers", "kv_bytes", (10, [["full", 2, 100]]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, kind="local")]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, window=8)]), {}),
    ("layers", "kv_bytes", (10, [{"kind": "window", "count": 3, "bytes_per_token": 50}]), {}),
    ("layers", "kv_bytes", (10, [{"kind": "sparse", "count": 4, "bytes_per_token": 20, "top_k": 5}]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, count=0)]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, count=2.0)]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, count=True)]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, bytes_per_token=0)]), {}),
    ("layers", "kv_bytes", (10, [dict(FULL, bytes_per_token=float("nan"))]), {}),
    ("layers", "kv_bytes", (10, [dict(WIN, window=0)]), {}),
    ("layers", "kv_bytes", (10, [dict(WIN, window=8.5)]), {}),
    ("layers", "kv_bytes", (10, [dict(SPARSE, top_k=0)]), {}),
    ("layers", "kv_bytes", (10, [dict(SPARSE, index_bytes_per_token=-1)]), {}),
    ("layers", "kv_bytes", (10, [dict(SPARSE, index_bytes_per_token=float("inf"))]), {}),
    ("layers", "kv_bytes", (10, [FULL, "window"]), {}),
    ("budget_bytes", "max_context", (-1, [FULL]), {}),
    ("budget_bytes", "max_context", (float("inf"), [FULL]), {}),
    ("budget_bytes", "max_context", (False, [FULL]), {}),
    ("layers", "max_context", (1e9, []), {}),
    ("layers", "max_context", (1e9, [dict(WIN, window=-8)]), {}),
    ("layers", "max_context", (1e9, [dict(FULL, kind=None)]), {}),
]


@pytest.mark.parametrize("field,name,args,kwargs", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args, kwargs):
    expect_value_error(call(submission, name), *args, field=field, **kwargs)


def test_valid_smallest_values():
    tiny = [{"kind": "window", "count": 1, "bytes_per_token": 1e-9, "window": 1},
            {"kind": "sparse", "count": 1, "bytes_per_token": 1e-9, "top_k": 1, "index_bytes_per_token": 0}]
    got, expected = both("kv_bytes", 3, tiny)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("layer_bytes_per_token", "gqa", dtype_bytes=1e-9, kv_heads=1, head_dim=1)
    check_close(got, expected, rtol=RTOL)


def _random(n, seed=169):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        groups = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["full", "window", "sparse"])
            g = {"kind": kind, "count": rng.randint(1, 64), "bytes_per_token": rng.choice([576, 1152, 2048, 4096])}
            if kind == "window":
                g["window"] = rng.choice([128, 512, 4096, 32768])
            if kind == "sparse":
                g["top_k"] = rng.choice([512, 2048, 4096])
                g["index_bytes_per_token"] = rng.choice([0, 64, 128, 132])
            groups.append(g)
        out.append((rng.randint(0, 2_000_000), rng.uniform(0, 200e9), groups))
    return out


RANDOM = _random(16)


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    context, budget, groups = RANDOM[index]
    got, expected = both("kv_bytes", context, groups)
    check_close(got, expected, rtol=RTOL)
    got, expected = both("max_context", budget, groups)
    check_optional(got, expected)
