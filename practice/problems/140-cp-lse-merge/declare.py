"""Parameter domains of 140 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real, Str

ROW = List(Real(), min_len=1)
MATRIX = List(ROW, min_len=1, note="每行一样长", note_en="all rows have one length")
RESULT = Dict({"out": List(List(Real())), "lse": List(Real())})

FUNCTIONS = {
    "partial_attention": Fn(
        q=MATRIX, k=MATRIX, v=MATRIX,
        returns=RESULT,
        rules=["`k` 的每行长度等于 `q` 的每行长度 `d`（报 `k`）", "`v` 的行数等于 `k` 的行数（报 `v`）"],
        rules_en=["`k`'s rows have the length `d` of `q`'s rows (reported as `k`)",
                  "`v` has as many rows as `k` (reported as `v`)"],
        example={"q": [[1.0, 0.0], [0.5, -1.0]], "k": [[1.0, 2.0], [0.0, 1.0]], "v": [[1.0], [2.0]]}),
    "merge_partials": Fn(
        outs=List(MATRIX, min_len=1, note="各项的形状相同", note_en="all items have one shape"),
        lses=List(ROW, min_len=1),
        returns=RESULT,
        rules=["`lses` 的项数等于 `outs` 的项数，每项的长度等于 `outs[0]` 的行数 `n`（报 `lses`）"],
        rules_en=["`lses` has one item per item of `outs`, each of length `n`, the rows of `outs[0]` "
                  "(reported as `lses`)"],
        example={"outs": [[[1.0, 2.0], [0.0, 1.0]], [[3.0, 0.0], [2.0, 2.0]]], "lses": [[1.0, 0.5], [2.0, 0.5]]}),
    "cp_causal_work": Fn(
        chunk_len=Int(ge=1), cp=Int(ge=1), layout=Str(choices=["contiguous", "zigzag"]),
        returns=List(Int(ge=1)),
        example={"chunk_len": 4, "cp": 4, "layout": "zigzag"}),
}
