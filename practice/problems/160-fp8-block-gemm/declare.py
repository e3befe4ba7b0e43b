"""Parameter domains of 160 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

ROWS = List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length")
MATRIX = List(List(Real()))

FUNCTIONS = {
    "to_e4m3": Fn(
        values=List(Real()),
        returns=List(Real(ge=-448, le=448)),
        example={"values": [0.3, 1.0625, 1.1875, 500.0, -0.001, 0.0]}),
    "quantize": Fn(
        matrix=ROWS, block_rows=Int(ge=1), block_cols=Int(ge=1),
        returns=Dict({"q": MATRIX, "scales": MATRIX}),
        example={"matrix": [[1.0, -3.0, 0.5], [0.0, 0.0, 0.0]], "block_rows": 1, "block_cols": 2}),
    "block_matmul": Fn(
        a=ROWS, b=ROWS, block=Int(ge=1),
        returns=Dict({"c": MATRIX, "rel_error": Real(ge=0)}),
        rules=["`b` 的行数等于 `a` 的列数 `K`（报 `b`）"],
        rules_en=["`b` has as many rows as `a` has columns (reported as `b`)"],
        example={"a": [[0.3, -1.7, 2.2, 0.05], [100.0, 0.01, -3.0, 7.5]],
                 "b": [[1.0, 0.5], [-0.25, 2.0], [0.1, 0.0], [3.3, -1.0]], "block": 2}),
}
