"""Parameter domains of 179 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

TENSORS = List(Int(ge=1), min_len=1)
EXAMPLE = [3000000000, 2000000000, 4000000000, 1000000000, 6000000000, 2000000000]

FUNCTIONS = {
    "make_buckets": Fn(
        tensor_bytes=TENSORS, bucket_bytes=Int(ge=1),
        returns=List(List(Int(ge=0), min_len=1), min_len=1),
        example={"tensor_bytes": [3, 2, 4, 1, 6, 2], "bucket_bytes": 5}),
    "update_time": Fn(
        tensor_bytes=TENSORS, bucket_bytes=Int(ge=1), link_gbs=Real(gt=0), apply_gbs=Real(gt=0),
        per_bucket_s=Real(ge=0),
        returns=Dict({"buckets": Int(ge=1), "serial_s": Real(gt=0), "pipelined_s": Real(gt=0)}),
        example={"tensor_bytes": EXAMPLE, "bucket_bytes": 5000000000, "link_gbs": 50, "apply_gbs": 200,
                 "per_bucket_s": 0.01}),
}
