"""Argument checks shared by the entry points: clear ValueErrors naming the field and range."""

from __future__ import annotations

import math
import numbers

import numpy as np


def check_int(name: str, value, low: int | None) -> None:
    """``value`` must be a whole number (not a bool), at least ``low`` when given."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        ok = True
    if not ok or (low is not None and value < low):
        bound = f" >= {low}" if low is not None else ""
        raise ValueError(f"{name} must be a whole number{bound}, got {value!r}")


def check_number(name: str, value, low: float, *, strict: bool = True, note: str = "") -> None:
    """``value`` must be a finite real number (not a bool) above ``low`` (``strict``) or at least it.

    ``note`` is added to the message, e.g. "(requests per second)".
    """
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    if not ok or value < low or (strict and value == low):
        note = f" {note}" if note else ""
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}{note}, got {value!r}")


def check_lengths_fit(setup, input_len, output_len) -> None:      # setup: a sim.Setup (no import: no cycle)
    """A request reserves input_len + output_len tokens of KV; one that can never fit would wait forever.

    Lengths are ints, or per-request sequences (the message then names the largest request).
    """
    need = np.asarray(input_len, dtype=np.int64) + np.asarray(output_len, dtype=np.int64)
    worst = int(np.argmax(need))
    if setup.kv is not None:
        # Paged: alone, a request holds at most ceil((input + output) / B) blocks, and the watermark
        # is spared only while others run; one that cannot fit alone would preempt itself forever.
        B = setup.kv.block_size
        room = setup.kv_capacity_tokens // B * B
        if need.flat[worst] > room:
            where = f"request {worst}: " if need.ndim else ""
            raise ValueError(
                f"{where}input_len + output_len = {int(need.flat[worst])} tokens do not fit the KV even alone "
                f"(allowed: <= {room}, the whole blocks of kv_capacity_tokens = {setup.kv_capacity_tokens}, "
                f"block_size {B})")
        spec = setup.speculative
        if spec is not None and need.flat[worst] - 1 + 2 * spec.k > room:
            # its last decode step holds its tokens so far, k drafts and k lookahead slots (V1)
            where = f"request {worst}: " if need.ndim else ""
            raise ValueError(
                f"{where}input_len + output_len - 1 + 2k = {int(need.flat[worst]) - 1 + 2 * spec.k} tokens (k = "
                f"{spec.k} drafts and as many lookahead slots, speculative decoding) do not fit the KV even "
                f"alone (allowed: <= {room}, the whole blocks of kv_capacity_tokens)")
        return
    if need.flat[worst] > setup.kv_capacity_tokens:
        where = f"request {worst}: " if need.ndim else ""
        raise ValueError(
            f"{where}input_len + output_len = {int(need.flat[worst])} tokens can never fit: a request reserves its whole KV "
            f"at admission, and kv_capacity_tokens is {setup.kv_capacity_tokens} "
            f"(allowed: input_len + output_len <= kv_capacity_tokens)")
