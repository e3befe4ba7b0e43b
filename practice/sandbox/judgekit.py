"""Comparison helpers used by the problems' tests inside the judge's sandbox.

This file is copied next to the learner's ``submission.py`` in a temporary folder; the tests
import it as ``judgekit``. A failed comparison raises :class:`Mismatch`, which carries a
machine-readable reason code (rendered in Chinese or English by the judge), never the expected
value in its message. The expected and actual values travel as attributes so that the judge can
show them for the worked example only.
"""
from __future__ import annotations

import math
import numbers
import re

__all__ = ["Mismatch", "check_close", "expect_value_error", "run_example", "call"]


class Mismatch(AssertionError):
    """A wrong answer. ``code`` and ``params`` describe why, without expected values."""

    def __init__(self, code: str, **params):
        self.code = code
        self.params = params
        self.got = None
        self.expected = None
        super().__init__(f"{code} {params}")


def _type_name(value) -> str:
    return type(value).__name__


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_integral(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return False


def _compare(got, expected, path: str, rtol: float, atol: float) -> None:
    if isinstance(expected, bool) or expected is None:
        if got is not expected and got != expected:
            raise Mismatch("exact", path=path)
        return
    if isinstance(expected, str):
        if not isinstance(got, str):
            raise Mismatch("type", path=path, want="str", got=_type_name(got))
        if got != expected:
            raise Mismatch("exact", path=path)
        return
    if _is_integral(expected):
        if not _is_number(got):
            raise Mismatch("type", path=path, want="int", got=_type_name(got))
        if isinstance(got, float) or not _is_integral(got):
            value = float(got)
            if math.isnan(value) or math.isinf(value):
                raise Mismatch("nan", path=path)
            raise Mismatch("type", path=path, want="int", got=_type_name(got))
        if int(got) != int(expected):
            raise Mismatch("exact", path=path)
        return
    if _is_number(expected):
        if not _is_number(got):
            raise Mismatch("type", path=path, want="float", got=_type_name(got))
        value = float(got)
        if math.isnan(value) or math.isinf(value):
            raise Mismatch("nan", path=path)
        if not abs(value - float(expected)) <= atol + rtol * abs(float(expected)):
            raise Mismatch("value", path=path, rtol=rtol, atol=atol)
        return
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            raise Mismatch("type", path=path, want="dict", got=_type_name(got))
        missing = sorted(str(k) for k in expected if k not in got)
        if missing:
            raise Mismatch("missing_keys", path=path, keys=", ".join(missing))
        extra = sorted(str(k) for k in got if k not in expected)
        if extra:
            raise Mismatch("extra_keys", path=path, keys=", ".join(extra))
        for key in expected:
            _compare(got[key], expected[key], f"{path}[{key!r}]", rtol, atol)
        return
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) and not hasattr(got, "tolist"):
            raise Mismatch("type", path=path, want="list", got=_type_name(got))
        if hasattr(got, "tolist") and not isinstance(got, (list, tuple)):
            got = got.tolist()
            if not isinstance(got, list):
                raise Mismatch("type", path=path, want="list", got=_type_name(got))
        if len(got) != len(expected):
            raise Mismatch("length", path=path, want=len(expected), got=len(got))
        for i, (g, e) in enumerate(zip(got, expected)):
            _compare(g, e, f"{path}[{i}]", rtol, atol)
        return
    raise TypeError(f"judgekit cannot compare expected values of type {_type_name(expected)}")


def check_close(got, expected, *, rtol: float = 1e-9, atol: float = 0.0, path: str = "result"):
    """Compare a returned value with the expected one.

    Integers and strings must match exactly; floats within ``atol + rtol * |expected|``; dicts
    must have exactly the expected keys; lists the expected length. NaN and infinities are
    always wrong.
    """
    try:
        _compare(got, expected, path, rtol, atol)
    except Mismatch as exc:
        exc.got = got
        exc.expected = expected
        raise


def _declared_rule(fn, field: str) -> dict:
    """The rule ``declare.py`` gives ``field`` (zh and en), for the verdict; {} without one."""
    import sys
    declare, kit = sys.modules.get("declare"), sys.modules.get("declkit")
    if declare is None or kit is None:
        return {}
    name = getattr(fn, "__name__", "")
    functions = getattr(declare, "FUNCTIONS", {})
    zh = kit.rule_for(functions, name, field, "zh")
    return {} if zh is None else {"rule": zh, "rule_en": kit.rule_for(functions, name, field, "en")}


def expect_value_error(fn, *args, field: str, **kwargs) -> None:
    """The call must raise ``ValueError`` whose message names ``field``. Where the problem declares
    ``field``, the verdict quotes its rule (never an expected value)."""
    try:
        fn(*args, **kwargs)
    except ValueError as exc:
        if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(field) + r"(?![A-Za-z0-9_])", str(exc)):
            rule = _declared_rule(fn, field)
            raise Mismatch("error_field_rule" if rule else "error_field", field=field, **rule) from None
        return
    rule = _declared_rule(fn, field)
    raise Mismatch("no_raise_rule" if rule else "no_raise", field=field, **rule)


def call(module, name: str):
    """Look up the function ``name`` in the learner's module with a clear error."""
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise Mismatch("no_function", name=name)
    return fn


def run_example(module, example: dict) -> None:
    """Run the statement's worked example: call, then compare with the stated tolerance."""
    fn = call(module, example["function"])
    got = fn(*example.get("args", []), **example.get("kwargs", {}))
    check_close(got, example["expected"], rtol=example.get("rtol", 1e-9),
                atol=example.get("atol", 0.0))
