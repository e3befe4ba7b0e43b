"""Reading request traces: the project's own CSV/JSONL form, Mooncake's and Azure's public traces.

    read(path, format="auto") -> Trace       one reader; format "csv" | "jsonl" | "mooncake" | "azure"
    mooncake(path), azure(path)              the same with the format named
    trace.scaled(k), trace.window(start_s, duration_s)
                                             replay at k times the rate; cut a window

Formats (a ``.gz`` suffix on any of them is read through gzip):

- ``csv`` (with a header) or ``jsonl``: ``arrival`` (seconds, finite, >= 0, nondecreasing),
  ``input_len`` and ``output_len`` (whole numbers >= 1); other columns are ignored.
- ``mooncake``: kvcache-ai/Mooncake's FAST'25 traces (``FAST25-release/traces/*.jsonl``): per line
  ``timestamp`` (ms from the trace's start), ``input_length``, ``output_length`` and ``hash_ids``,
  one id per 512-token block of the prompt (the last block may be partial). Equal ids at the same
  position mean equal prompt content up to the end of that block (the ids are remapped chain hashes).
- ``azure``: the Azure LLM inference trace 2023 (Azure/AzurePublicDataset, ``data/``): CSV with
  ``TIMESTAMP`` (``YYYY-MM-DD HH:MM:SS.fffffff``), ``ContextTokens`` and ``GeneratedTokens``; arrivals
  are seconds after the first row.

``auto`` picks by content: a JSONL whose first object has ``hash_ids`` is Mooncake's, a CSV whose
header has ``TIMESTAMP`` is Azure's, otherwise by suffix. A bad row raises ``ValueError`` naming the
file, the line number (1-based; a CSV header is line 1) and the field.

Mooncake's block ids become the prefix cache's identity (``sim.kv.prefix_cache``): block j of the
trace is the segment ``(hash_ids[j], min(512 (j + 1), input_len))``. A segment's key stands for all
content before it too, which is what a chain hash means, so the mapping holds for any block size of
the simulated cache: a simulated block is named by the first trace block that covers its end.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("arrival", "input_len", "output_len")
FORMATS = ("auto", "csv", "jsonl", "mooncake", "azure")
MOONCAKE_BLOCK_TOKENS = 512          # the trace's block size (its README: "The block size is 512 tokens")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests read from a file, in arrival order. ``hash_ids`` (Mooncake) holds each request's
    prompt block ids, ``block_tokens`` tokens per block; both None for formats without them."""

    name: str
    arrival: tuple
    input_len: tuple
    output_len: tuple
    hash_ids: tuple | None = None
    block_tokens: int | None = None

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def duration_s(self) -> float:
        return self.arrival[-1] - self.arrival[0] if self.arrival else 0.0

    def prefix(self) -> tuple | None:
        """Per request, its prefix identity for ``sim.kv.prefix_cache`` (None without hash ids)."""
        if self.hash_ids is None:
            return None
        b = self.block_tokens
        return tuple(tuple((int(h), min(b * (j + 1), n)) for j, h in enumerate(ids))
                     for ids, n in zip(self.hash_ids, self.input_len))

    def scaled(self, speed: float) -> "Trace":
        """The same requests replayed ``speed`` times as fast (arrival times divided by ``speed``)."""
        _check_positive("speed", speed)
        return self._with(tuple(t / speed for t in self.arrival), range(len(self)), f"{self.name} x{speed:g}")

    def window(self, start_s: float = 0.0, duration_s: float | None = None) -> "Trace":
        """The requests arriving in ``[start_s, start_s + duration_s)``, times shifted to start at 0."""
        if not (isinstance(start_s, (int, float)) and not isinstance(start_s, bool) and math.isfinite(start_s)
                and start_s >= 0):
            raise ValueError(f"start_s must be a finite number >= 0 (seconds), got {start_s!r}")
        if duration_s is not None:
            _check_positive("duration_s", duration_s)
        end = math.inf if duration_s is None else start_s + duration_s
        keep = [i for i, t in enumerate(self.arrival) if start_s <= t < end]
        if not keep:
            raise ValueError(f"window [{start_s}, {end}) s of {self.name} holds no request "
                             f"(its arrivals span 0-{self.arrival[-1]:.6g} s)")
        return self._with(tuple(self.arrival[i] - start_s for i in keep), keep, f"{self.name}[{start_s:g}s+]")

    def _with(self, arrival, keep, name) -> "Trace":
        pick = (lambda xs: tuple(xs[i] for i in keep)) if not isinstance(keep, range) else (lambda xs: xs)
        return Trace(name, arrival, pick(self.input_len), pick(self.output_len),
                     None if self.hash_ids is None else pick(self.hash_ids), self.block_tokens)


def read(path, format: str = "auto") -> Trace:
    """Read a trace file (see the module docstring for the formats)."""
    path = Path(path)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if not path.is_file():
        raise ValueError(f"trace file {str(path)!r} does not exist")
    if format == "auto":
        format = _sniff(path)
    reader = {"csv": _plain_csv, "jsonl": _plain_jsonl, "mooncake": _mooncake, "azure": _azure}[format]
    arrival, inp, out, ids = reader(path)
    if not arrival:
        raise ValueError(f"trace file {str(path)!r} has no requests")
    return Trace(path.name, tuple(arrival), tuple(inp), tuple(out), ids,
                 MOONCAKE_BLOCK_TOKENS if format == "mooncake" else None)


def mooncake(path) -> Trace:
    """Read one of Mooncake's FAST'25 traces (timestamps in ms, 512-token block ids)."""
    return read(path, "mooncake")


def azure(path) -> Trace:
    """Read an Azure LLM inference trace 2023 CSV (code or conversation service)."""
    return read(path, "azure")


# --- formats ------------------------------------------------------------------------------------

def _open(path: Path):
    if path.suffix.lower() == ".gz":
        return io.TextIOWrapper(gzip.open(path), newline="")
    return path.open(newline="")


def _base_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _sniff(path: Path) -> str:
    suffix = _base_suffix(path)
    if suffix == ".csv":
        with _open(path) as f:
            header = next(csv.reader(f), [])
        return "azure" if "TIMESTAMP" in header else "csv"
    if suffix in (".jsonl", ".ndjson"):
        with _open(path) as f:
            for text in f:
                if text.strip():
                    try:
                        row = json.loads(text)
                    except json.JSONDecodeError:
                        return "jsonl"          # the plain reader names the bad line
                    return "mooncake" if isinstance(row, dict) and "hash_ids" in row else "jsonl"
        return "jsonl"
    raise ValueError(f"trace file {str(path)!r}: unknown format {suffix!r}; use .csv or .jsonl "
                     f"(optionally .gz), or name the format ({FORMATS[1:]})")


def _plain_csv(path: Path):
    return _columns(path, _csv_rows(path, COLUMNS), "arrival", "input_len", "output_len", float)


def _plain_jsonl(path: Path):
    return _columns(path, _jsonl_rows(path, COLUMNS), "arrival", "input_len", "output_len", float)


def _mooncake(path: Path):
    keys = ("timestamp", "input_length", "output_length", "hash_ids")
    rows = list(_jsonl_rows(path, keys))
    arrival, inp, out, _ = _columns(path, iter(rows), "timestamp", "input_length", "output_length",
                                    lambda ms: ms / 1000.0)
    ids = []
    for (line, row), n in zip(rows, inp):
        where = f"{path.name} line {line}, column 'hash_ids'"
        h = row.get("hash_ids")
        need = -(-n // MOONCAKE_BLOCK_TOKENS)
        if not isinstance(h, list) or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in h):
            raise ValueError(f"{where}: must be a list of whole numbers >= 0, got {h!r:.80}")
        if len(h) != need:
            raise ValueError(f"{where}: {len(h)} block ids for input_length {n}; "
                             f"{MOONCAKE_BLOCK_TOKENS}-token blocks need {need}")
        ids.append(tuple(h))
    return arrival, inp, out, tuple(ids)


def _azure(path: Path):
    return _columns(path, _csv_rows(path, AZURE_COLUMNS), "TIMESTAMP", "ContextTokens", "GeneratedTokens",
                    None)


def _columns(path, rows, t_key, in_key, out_key, to_seconds):
    """Arrival seconds (from the first row for Azure timestamps), input and output lengths."""
    arrival, inp, out = [], [], []
    t0 = None
    for line, row in rows:
        where = f"{path.name} line {line}"
        if to_seconds is None:                   # Azure: an absolute timestamp, whole seconds and fraction
            ns = _timestamp_ns(row, t_key, where)
            t0 = ns if t0 is None else t0
            t = (ns - t0) / 1e9                     # integer nanoseconds: one rounding, not three
        else:
            t = to_seconds(_number(row, t_key, where))
            if not (math.isfinite(t) and t >= 0):
                raise ValueError(f"{where}, column {t_key!r}: must be a finite number >= 0, got {row[t_key]!r}")
        if arrival and t < arrival[-1]:
            raise ValueError(f"{where}, column {t_key!r}: {row[t_key]!r} is earlier than the row before; "
                             "sort the trace by arrival")
        arrival.append(t)
        inp.append(_length(row, in_key, where))
        out.append(_length(row, out_key, where))
    return arrival, inp, out, None


def _csv_rows(path: Path, columns):
    with _open(path) as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path.name} line 1: header lacks column(s) {missing}; "
                             f"it needs {list(columns)}, got {reader.fieldnames}")
        for row in reader:
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue                        # blank line
            yield reader.line_num, row


def _jsonl_rows(path: Path, keys):
    with _open(path) as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path.name} line {line}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path.name} line {line}: expected an object with keys {list(keys)}")
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


def _timestamp_ns(row: dict, column: str, where: str) -> int:
    """Nanoseconds since 1970 of ``YYYY-MM-DD HH:MM:SS[.fraction]`` (up to 9 fraction digits)."""
    text = (row.get(column) or "").strip()
    try:
        day, clock = text.split(" ")
        whole, _, frac = clock.partition(".")
        stamp = datetime.datetime.strptime(f"{day} {whole}", "%Y-%m-%d %H:%M:%S")
        if frac and not (frac.isdigit() and len(frac) <= 9):
            raise ValueError
    except ValueError:
        raise ValueError(f"{where}, column {column!r}: expected 'YYYY-MM-DD HH:MM:SS.fffffff', "
                         f"got {text!r}") from None
    whole = (stamp - datetime.datetime(1970, 1, 1)) // datetime.timedelta(seconds=1)
    return whole * 10 ** 9 + int(frac.ljust(9, "0") or 0)


def _check_positive(name, x) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
