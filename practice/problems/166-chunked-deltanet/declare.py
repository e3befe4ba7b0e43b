"""Parameter domains of 166 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

ROWS = List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length")
BETA = List(Real(ge=0, le=1), min_len=1, note="每个 token 一项", note_en="one per token")
RESULT = Dict({"out": List(List(Real())), "state": List(List(Real()))})
RULES = ["`k` 与 `q` 形状相同（报 `k`）", "`v` 的行数等于 token 数 `T`（报 `v`）", "`len(beta) = T`（报 `beta`）"]
RULES_EN = ["`k` has the shape of `q` (reported as `k`)", "`v` has `T` rows (reported as `v`)",
            "`len(beta) = T` (reported as `beta`)"]
EXAMPLE = {"q": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "k": [[1.0, 0.0], [0.6, 0.8], [1.0, 0.0]],
           "v": [[2.0], [1.0], [3.0]], "beta": [1.0, 0.5, 1.0]}

FUNCTIONS = {
    "delta_recurrent": Fn(q=ROWS, k=ROWS, v=ROWS, beta=BETA, returns=RESULT, rules=RULES, rules_en=RULES_EN,
                          example=EXAMPLE),
    "delta_chunked": Fn(q=ROWS, k=ROWS, v=ROWS, beta=BETA, chunk=Int(ge=1), returns=RESULT, rules=RULES,
                        rules_en=RULES_EN, example={**EXAMPLE, "chunk": 2}),
    "state_vs_kv": Fn(
        heads=Int(ge=1), key_dim=Int(ge=1), value_dim=Int(ge=1), layers=Int(ge=1), dtype_bytes=Int(ge=1),
        kv_bytes_per_token=Real(gt=0),
        returns=Dict({"state_bytes": Int(ge=1), "equal_kv_tokens": Real(gt=0)}),
        example={"heads": 16, "key_dim": 128, "value_dim": 128, "layers": 48, "dtype_bytes": 2,
                 "kv_bytes_per_token": 65536}),
}
