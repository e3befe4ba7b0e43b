"""179. 热更新权重。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 179
"""


def make_buckets(tensor_bytes, bucket_bytes):
    """Return the buckets: lists of tensor indices, in order."""
    raise NotImplementedError


def update_time(tensor_bytes, bucket_bytes, link_gbs, apply_gbs, per_bucket_s):
    """Return {"buckets": int, "serial_s": float, "pipelined_s": float}."""
    raise NotImplementedError
