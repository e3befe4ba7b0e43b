"""Parameter domains of 127 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Fn, Int, List

OP = List(Any(), min_len=1, note="一个操作：`[\"alloc\", 序列, token 数]`、`[\"append\", 序列, token 数]`、"
                                  "`[\"fork\", 父序列, 子序列]` 或 `[\"free\", 序列]`，token 数是 ≥ 1 的整数",
          note_en="one operation: `[\"alloc\", seq, tokens]`, `[\"append\", seq, tokens]`, `[\"fork\", parent, child]` "
                  "or `[\"free\", seq]`, tokens an integer >= 1")

FUNCTIONS = {
    "run_block_pool": Fn(
        num_blocks=Int(ge=1), block_size=Int(ge=1), ops=List(OP),
        returns=List(Dict({"ok": Bool()}, open=True)),
        rules=["`alloc` 一个已存在的序列、`append`/`free` 一个不存在的序列、`fork` 的父序列不存在或子序列已存在，都报 `ops`"],
        rules_en=["`alloc` of an existing sequence, `append`/`free` of an unknown one, `fork` from an unknown parent "
                  "or to an existing child: `ops`"],
        example={"num_blocks": 8, "block_size": 4,
                 "ops": [["alloc", "A", 6], ["fork", "A", "B"], ["append", "B", 3], ["free", "A"]]}),
}
