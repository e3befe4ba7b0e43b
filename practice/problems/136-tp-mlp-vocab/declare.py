"""Parameter domains of 136 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Either, Fn, Int, List, Optional, Real

ROWS = List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length")
MATRIX = List(List(Real()))
TP = Int(ge=1)

FUNCTIONS = {
    "tp_mlp": Fn(
        x=ROWS, w_gate=ROWS, w_up=ROWS, w_down=ROWS, tp=TP,
        returns=Dict({"partials": List(MATRIX), "y": MATRIX}),
        rules=["`w_gate` 是 `d × I`，`d` 是 `x` 的列数（报 `w_gate`）", "`w_up` 与 `w_gate` 形状相同（报 `w_up`）",
               "`w_down` 有 `I` 行（报 `w_down`）", "`tp` 整除 `I`（报 `tp`）"],
        rules_en=["`w_gate` is `d x I`, `d` the columns of `x` (reported as `w_gate`)",
                  "`w_up` has the shape of `w_gate` (reported as `w_up`)", "`w_down` has `I` rows (reported as `w_down`)",
                  "`tp` divides `I` (reported as `tp`)"],
        example={"x": [[1.0, -1.0]], "w_gate": [[1.0, 0.0, 2.0, -1.0], [0.0, 1.0, 1.0, 1.0]],
                 "w_up": [[1.0, 1.0, 0.5, 0.0], [0.0, -1.0, 1.0, 2.0]], "w_down": [[1.0], [2.0], [-1.0], [0.5]],
                 "tp": 2}),
    "vocab_embedding": Fn(
        ids=List(Int(ge=0), min_len=1, note="每项小于词表大小 `V`（`table` 的行数）",
                 note_en="each below the vocabulary size `V` (the rows of `table`)"),
        table=ROWS, tp=TP,
        returns=Dict({"partials": List(MATRIX), "out": MATRIX}),
        example={"ids": [4, 0, 2], "table": [[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, -1.0], [4.0, 4.0]], "tp": 2}),
    "parallel_argmax": Fn(
        hidden=ROWS, lm_head=ROWS, tp=TP,
        returns=Dict({"local": List(List(List(Either(Optional(Real()), Int(ge=-1))))), "tokens": List(Int(ge=0))}),
        rules=["`lm_head` 有 `d` 行，`d` 是 `hidden` 的列数（报 `lm_head`）"],
        rules_en=["`lm_head` has `d` rows, `d` the columns of `hidden` (reported as `lm_head`)"],
        example={"hidden": [[1.0, 0.0], [0.0, 1.0]], "lm_head": [[1.0, 3.0, -1.0, 3.0, 0.0], [2.0, 0.0, 5.0, 1.0, 0.5]],
                 "tp": 3}),
}
