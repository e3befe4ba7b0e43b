"""Parameter domains of 181 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

ROWS = List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length")
ADAPTER = Dict({"a": ROWS, "b": ROWS, "alpha": Real(gt=0)})
EX_X = [[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]]
EX_W = [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]]
EX_ADAPTERS = [{"a": [[1.0], [0.0]], "b": [[2.0, 0.0, 0.0]], "alpha": 1},
               {"a": [[0.0, 1.0], [1.0, 0.0]], "b": [[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]], "alpha": 4}]

FUNCTIONS = {
    "lora_forward": Fn(
        x=ROWS, w=ROWS,
        adapters=List(ADAPTER, note="`a` 是 `d_in × r`，`b` 是 `r × d_out`", note_en="`a` is `d_in x r`, `b` is `r x d_out`"),
        adapter_ids=List(Int(ge=-1), min_len=1, note="每个 token 一项，都小于 `len(adapters)`",
                         note_en="one per token, each below `len(adapters)`"),
        returns=List(List(Real())),
        rules=["`w` 有 `d_in` 行（`x` 的列数；报 `w`）"],
        rules_en=["`w` has `d_in` rows, the columns of `x` (reported as `w`)"],
        example={"x": EX_X, "w": EX_W, "adapters": EX_ADAPTERS, "adapter_ids": [1, -1, 0]}),
    "segments": Fn(
        adapter_ids=List(Int(ge=-1)),
        returns=Dict({"order": List(Int(ge=0)), "segments": List(List(Int(ge=-1), min_len=3, max_len=3))}),
        example={"adapter_ids": [2, 0, -1, 2, 0, 1]}),
    "lora_flops": Fn(
        adapter_ids=List(Int(ge=-1), note="都小于 `len(ranks)`", note_en="each below `len(ranks)`"),
        ranks=List(Int(ge=1)), d_in=Int(ge=1), d_out=Int(ge=1),
        returns=Dict({"base": Int(ge=0), "lora": Int(ge=0), "overhead": Real(ge=0)}),
        example={"adapter_ids": [0, 1, -1, 1], "ranks": [16, 64], "d_in": 4096, "d_out": 4096}),
}
