"""Argument checks shared by the entry points: clear ValueErrors naming the field and range."""

from __future__ import annotations

import numbers

from sim.setup import Setup


def check_int(name: str, value, low: int | None) -> None:
    """``value`` must be a whole number (not a bool), at least ``low`` when given."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        ok = True
    if not ok or (low is not None and value < low):
        bound = f" >= {low}" if low is not None else ""
        raise ValueError(f"{name} must be a whole number{bound}, got {value!r}")


def check_lengths_fit(setup: Setup, input_len: int, output_len: int) -> None:
    """A request reserves input_len + output_len tokens of KV; one that can never fit would wait forever."""
    need = int(input_len) + int(output_len)
    if need > setup.kv_capacity_tokens:
        raise ValueError(
            f"input_len + output_len = {need} tokens can never fit: a request reserves its whole KV "
            f"at admission, and kv_capacity_tokens is {setup.kv_capacity_tokens} "
            f"(allowed: input_len + output_len <= kv_capacity_tokens)")
