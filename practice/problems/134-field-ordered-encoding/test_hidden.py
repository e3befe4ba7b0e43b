"""Hidden cases for 134: varints at 0, 127, 128, 16383, 16384 and 2^64 - 1, large field numbers,
defaults omitted, empty messages, UTF-8 lengths, field-number order regardless of schema and dict
order; decoding round trips, unknown fields skipped (both wire types), repeated fields (last wins),
truncated and malformed data; shared prefixes; random messages vs the reference (and the reference
checked: decode(encode(m)) is m with defaults). Everything exactly."""
import random

import pytest

import reference
import submission
from judgekit import call, check_close, expect_value_error

S = [{"name": "prompt", "number": 3, "type": "str"}, {"name": "model", "number": 1, "type": "str"},
     {"name": "max_tokens", "number": 2, "type": "int"}, {"name": "seed", "number": 4, "type": "int"}]
INTS = [{"name": "x", "number": 1, "type": "int"}]


def both(name, *args):
    expected = getattr(reference, name)(*args)
    got = call(submission, name)(*args)
    return got, expected


@pytest.mark.parametrize("value", [1, 127, 128, 300, 16383, 16384, 2**32, 2**64 - 1])
def test_varint_sizes(value):
    check_close(*both("encode", {"x": value}, INTS))
    check_close(*both("decode", reference.encode({"x": value}, INTS), INTS))


def test_zero_and_empty_are_not_written():
    check_close(*both("encode", {"prompt": "", "max_tokens": 0}, S))
    check_close(*both("encode", {}, S))


def test_large_field_numbers():
    schema = [{"name": "a", "number": 16, "type": "int"}, {"name": "b", "number": 2**29 - 1, "type": "str"}]
    check_close(*both("encode", {"a": 1, "b": "z"}, schema))
    check_close(*both("decode", reference.encode({"a": 1, "b": "z"}, schema), schema))


def test_utf8_length_in_bytes():
    check_close(*both("encode", {"prompt": "你好 🙂"}, S))
    check_close(*both("decode", reference.encode({"prompt": "你好 🙂"}, S), S))


def test_order_is_by_field_number():
    m = {"seed": 7, "prompt": "p", "model": "m", "max_tokens": 1}
    check_close(*both("encode", m, S))
    check_close(*both("encode", m, list(reversed(S))))


def test_long_string_has_a_two_byte_length():
    check_close(*both("encode", {"prompt": "a" * 200}, S))


def test_decode_bytes_0_and_255():
    # a zero value written explicitly by another encoder, and a varint byte of 255
    check_close(*both("decode", [16, 0], S))
    check_close(*both("decode", [16, 255, 1], S))


def test_decode_empty():
    check_close(*both("decode", [], S))


def test_decode_skips_unknown_fields():
    data = [5 << 3, 7, (9 << 3) | 2, 2, 65, 66] + reference.encode({"model": "q"}, S)
    check_close(*both("decode", data, S))


def test_decode_repeated_field_last_wins():
    data = reference.encode({"seed": 5}, S) + reference.encode({"seed": 9}, S)
    check_close(*both("decode", data, S))


def test_decode_out_of_order_fields():
    data = reference.encode({"prompt": "z"}, S) + reference.encode({"model": "m"}, S)
    check_close(*both("decode", data, S))


def test_shared_prefix():
    a = reference.encode({"model": "qwen", "max_tokens": 300, "prompt": "hello"}, S)
    b = reference.encode({"model": "qwen", "max_tokens": 300, "prompt": "help"}, S)
    check_close(*both("shared_prefix", a, b))
    check_close(*both("shared_prefix", a, a))
    check_close(*both("shared_prefix", [], a))
    check_close(*both("shared_prefix", [1], [2]))


def _message(rng):
    m = {}
    for f in S:
        if rng.random() < 0.7:
            m[f["name"]] = rng.choice([0, rng.randint(0, 300), rng.randint(0, 2**40)]) if f["type"] == "int" else \
                "".join(rng.choice("ab你🙂") for _ in range(rng.randint(0, 140)))
    return m


_rng = random.Random(134)
RANDOM = [_message(_rng) for _ in range(25)]


@pytest.mark.parametrize("index", range(len(RANDOM)), ids=[f"{i:02d}" for i in range(len(RANDOM))])
def test_random(index):
    m = RANDOM[index]
    got, expected = both("encode", m, S)
    full = {f["name"]: m.get(f["name"], 0 if f["type"] == "int" else "") for f in S}
    if reference.decode(expected, S) != full:
        raise RuntimeError("the reference's round trip loses the message")
    check_close(got, expected)
    check_close(*both("decode", expected, S))
    other = reference.encode(RANDOM[(index + 1) % len(RANDOM)], S)
    check_close(*both("shared_prefix", expected, other))


# Cross-field and cross-item rules only; the declared domains are covered by the generated cases.
BAD = [
    ("message", "encode", ({"nope": 1}, S)),
    ("message", "encode", ({"prompt": 3}, S)),
    ("message", "encode", ({"seed": "3"}, S)),
    ("message", "encode", ({"seed": 2**64}, S)),
    ("schema", "encode", ({}, S + [{"name": "seed", "number": 9, "type": "int"}])),
    ("schema", "decode", ([], S + [{"name": "other", "number": 4, "type": "int"}])),
    ("data", "decode", ([10], S)),
    ("data", "decode", ([10, 5, 65], S)),
    ("data", "decode", ([16, 128], S)),
    ("data", "decode", ([16 | 2, 1, 65], S)),
    ("data", "decode", ([10 - 2, 1], S)),
    ("data", "decode", ([(1 << 3) | 5, 0, 0, 0, 0], S)),
    ("data", "decode", ([10, 1, 255], S)),
    ("data", "decode", ([16, 256], S)),
]


@pytest.mark.parametrize("field,name,args", BAD, ids=[f"{b[1]}_{b[0]}_{i}" for i, b in enumerate(BAD)])
def test_invalid(field, name, args):
    expect_value_error(call(submission, name), *args, field=field)
