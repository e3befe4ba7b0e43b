"""Parameter domains of 157 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real, Str

POLICY = Str(choices=["split_k", "invariant"])

FUNCTIONS = {
    "reduce_f32": Fn(
        values=List(Real(), min_len=1), splits=Int(ge=1),
        returns=Real(),
        rules=["`splits` 整除 `len(values)`（报 `splits`）"],
        rules_en=["`splits` divides `len(values)` (reported as `splits`)"],
        example={"values": [1e8, 1.0, -1e8, 1.0], "splits": 2}),
    "splits_for": Fn(
        batch=Int(ge=1), policy=POLICY,
        returns=Int(ge=1),
        example={"batch": 8, "policy": "split_k"}),
    "logits_by_batch": Fn(
        x=List(Real(), min_len=4, note="长度是 4 的倍数", note_en="a length divisible by 4"),
        w=List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length"),
        batch_sizes=List(Int(ge=1), min_len=1), policy=POLICY,
        returns=Dict({"logits": List(List(Real())), "tokens": List(Int(ge=0)), "max_abs_diff": Real(ge=0)}),
        rules=["`w` 的行数等于 `len(x)`（报 `w`）"],
        rules_en=["`w` has `len(x)` rows (reported as `w`)"],
        example={"x": [1e8, 1.0, -1e8, 1.0], "w": [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.5]],
                 "batch_sizes": [1, 8, 64], "policy": "split_k"}),
}
