"""Reference solution for 134: a protobuf-style wire encoding with fields written in field-number
order (deterministic bytes for the same message), its decoder, and the shared prefix of two encodings."""
import numbers

TYPES = ("int", "str")


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _schema(schema):
    ok = isinstance(schema, list) and all(
        isinstance(f, dict) and set(f) == {"name", "number", "type"} and isinstance(f["name"], str) and f["name"]
        and _whole(f["number"]) and 1 <= f["number"] < 2**29 and f["type"] in TYPES for f in schema)
    if not ok or len({f["name"] for f in schema}) != len(schema) or len({f["number"] for f in schema}) != len(schema):
        raise ValueError(f"schema must be a list of {{name, number in [1, 2^29), type: 'int' or 'str'}} with distinct "
                         f"names and numbers, got {schema!r}")


def _varint(n):
    out = []
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return out


def encode(message, schema):
    """Fields in increasing field number: tag varint (number << 3 | wire type), then a varint for
    'int' (wire type 0) or a length varint and UTF-8 bytes for 'str' (wire type 2). Fields missing
    from the message or equal to the default (0, "") are not written."""
    _schema(schema)
    fields = {f["name"]: f for f in schema}
    if not isinstance(message, dict) or any(k not in fields for k in message):
        raise ValueError(f"message must be a dict whose keys are schema fields, got {message!r}")
    for k, v in message.items():
        if fields[k]["type"] == "int" and (not _whole(v) or not 0 <= v < 2**64):
            raise ValueError(f"message: {k} must be an integer in [0, 2^64), got {v!r}")
        if fields[k]["type"] == "str" and not isinstance(v, str):
            raise ValueError(f"message: {k} must be a string, got {v!r}")
    out = []
    for f in sorted(schema, key=lambda f: f["number"]):
        v = message.get(f["name"])
        if v is None or v == 0 or v == "":
            continue
        if f["type"] == "int":
            out += _varint(f["number"] << 3) + _varint(v)
        else:
            data = list(v.encode("utf-8"))
            out += _varint(f["number"] << 3 | 2) + _varint(len(data)) + data
    return out


def _read_varint(data, i):
    value, shift = 0, 0
    while True:
        if i >= len(data):
            raise ValueError("data: a varint runs past the end")
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if not b & 0x80:
            return value, i


def decode(data, schema):
    """Every schema field (defaults 0 and "" when absent); a repeated field keeps its last value;
    unknown field numbers with wire type 0 or 2 are skipped."""
    _schema(schema)
    if not isinstance(data, list) or any(not _whole(b) or not 0 <= b <= 255 for b in data):
        raise ValueError(f"data must be a list of bytes (integers in [0, 255]), got {data!r}")
    by_number = {f["number"]: f for f in schema}
    out = {f["name"]: (0 if f["type"] == "int" else "") for f in schema}
    i = 0
    while i < len(data):
        tag, i = _read_varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 2:
            length, i = _read_varint(data, i)
            if i + length > len(data):
                raise ValueError("data: a length-delimited field runs past the end")
            value, i = bytes(data[i:i + length]), i + length
        else:
            raise ValueError(f"data: wire type {wire} is not supported")
        f = by_number.get(number)
        if f is None:
            continue
        if (f["type"] == "int") != (wire == 0):
            raise ValueError(f"data: field {number} has the wrong wire type {wire}")
        if f["type"] == "str":
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"data: field {number} is not valid UTF-8") from None
        out[f["name"]] = value
    return out


def shared_prefix(a, b):
    """Number of leading bytes two encodings have in common."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, list) or any(not _whole(v) or not 0 <= v <= 255 for v in x):
            raise ValueError(f"{name} must be a list of bytes (integers in [0, 255]), got {x!r}")
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n
