"""Reading request traces: CSV (with a header) or JSONL, one request per row.

Columns / keys: ``arrival`` (seconds, finite, >= 0, nondecreasing), ``input_len`` and ``output_len``
(whole numbers >= 1). Other columns are ignored. A bad row raises ``ValueError`` naming the file,
the line number (1-based, the CSV header being line 1) and the column.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

COLUMNS = ("arrival", "input_len", "output_len")


def read_trace(path) -> tuple[list[float], list[int], list[int]]:
    """(arrival, input_len, output_len) lists from a ``.csv`` or ``.jsonl`` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"trace file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(path)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _jsonl_rows(path)
    else:
        raise ValueError(f"trace file {str(path)!r}: unknown format {suffix!r}; use .csv or .jsonl")
    arrival, inp, out = [], [], []
    for line, row in rows:
        where = f"{path.name} line {line}"
        t = _number(row, "arrival", where)
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"{where}, column 'arrival': must be a finite number >= 0, got {row['arrival']!r}")
        if arrival and t < arrival[-1]:
            raise ValueError(f"{where}, column 'arrival': {t} is earlier than the row before ({arrival[-1]}); "
                             "sort the trace by arrival")
        arrival.append(t)
        inp.append(_length(row, "input_len", where))
        out.append(_length(row, "output_len", where))
    if not arrival:
        raise ValueError(f"trace file {str(path)!r} has no requests")
    return arrival, inp, out


def _csv_rows(path: Path):
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name} line 1: header lacks column(s) {missing}; "
                             f"it needs {list(COLUMNS)}, got {reader.fieldnames}")
        for row in reader:
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue                        # blank line
            yield reader.line_num, row


def _jsonl_rows(path: Path):
    with path.open() as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path.name} line {line}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path.name} line {line}: expected an object with keys {list(COLUMNS)}")
            yield line, row


def _number(row: dict, column: str, where: str) -> float:
    if row.get(column) in (None, ""):
        raise ValueError(f"{where}, column {column!r}: missing")
    value = row[column]
    if isinstance(value, bool):
        raise ValueError(f"{where}, column {column!r}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}, column {column!r}: expected a number, got {value!r}") from None


def _length(row: dict, column: str, where: str) -> int:
    x = _number(row, column, where)
    if not (math.isfinite(x) and x.is_integer() and x >= 1):
        raise ValueError(f"{where}, column {column!r}: must be a whole number >= 1, got {row[column]!r}")
    return int(x)
