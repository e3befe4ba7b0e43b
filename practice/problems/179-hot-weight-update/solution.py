"""Reference solution for 179: a hot weight update of a running engine: tensors packed into buckets,
each bucket sent over the network and then applied on the GPU, one after the other or pipelined."""
import math
import numbers


def _whole(x):
    return not isinstance(x, bool) and isinstance(x, numbers.Integral)


def _buckets(tensor_bytes, bucket_bytes):
    out, size = [], 0
    for i, b in enumerate(tensor_bytes):
        if out and size + b <= bucket_bytes:
            out[-1].append(i)
            size += b
        else:
            out.append([i])
            size = b
    return out


def _check(tensor_bytes, bucket_bytes):
    if not isinstance(tensor_bytes, list) or not tensor_bytes or any(not _whole(b) or b < 1 for b in tensor_bytes):
        raise ValueError(f"tensor_bytes must be a non-empty list of integers >= 1, got {tensor_bytes!r}")
    if not _whole(bucket_bytes) or bucket_bytes < 1:
        raise ValueError(f"bucket_bytes must be an integer >= 1, got {bucket_bytes!r}")


def make_buckets(tensor_bytes, bucket_bytes):
    """Tensors in order; each joins the current bucket if it still fits within bucket_bytes, else
    starts a new one (a tensor larger than a bucket gets one of its own)."""
    _check(tensor_bytes, bucket_bytes)
    return _buckets(tensor_bytes, bucket_bytes)


def update_time(tensor_bytes, bucket_bytes, link_gbs, apply_gbs, per_bucket_s):
    """Bucket i takes x_i = bytes / link + per_bucket_s to arrive and c_i = bytes / apply to apply.
    Serial: sum of both. Pipelined: bucket i is sent right after bucket i - 1 arrived, and applied
    once it has arrived and bucket i - 1 is applied."""
    _check(tensor_bytes, bucket_bytes)
    for name, x in (("link_gbs", link_gbs), ("apply_gbs", apply_gbs)):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    if isinstance(per_bucket_s, bool) or not isinstance(per_bucket_s, numbers.Real) \
            or not math.isfinite(per_bucket_s) or per_bucket_s < 0:
        raise ValueError(f"per_bucket_s must be a finite number >= 0, got {per_bucket_s!r}")
    serial = arrived = applied = 0.0
    buckets = _buckets(tensor_bytes, bucket_bytes)
    for bucket in buckets:
        size = sum(tensor_bytes[i] for i in bucket)
        x = size / (link_gbs * 1e9) + per_bucket_s
        c = size / (apply_gbs * 1e9)
        serial += x + c
        arrived += x
        applied = max(applied, arrived) + c
    return {"buckets": len(buckets), "serial_s": serial, "pipelined_s": applied}
