"""Parameter domains of 134 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Either, Fn, Int, List, Map, Str

SCHEMA = List(Dict({"name": Str(nonempty=True), "number": Int(ge=1, lt=2**29), "type": Str(choices=["int", "str"])}),
              note="`name` 互不相同，`number` 互不相同", note_en="distinct `name`s and distinct `number`s")
BYTES = List(Int(ge=0, le=255))
EX_SCHEMA = [{"name": "model", "number": 1, "type": "str"}, {"name": "prompt", "number": 3, "type": "str"},
             {"name": "max_tokens", "number": 2, "type": "int"}, {"name": "seed", "number": 4, "type": "int"}]

FUNCTIONS = {
    "encode": Fn(
        message=Map(Str(nonempty=True), Either(Int(ge=0, lt=2**64), Str()),
                    note="键都是 schema 里的字段名，值的类型与字段的 `type` 一致",
                    note_en="keys are schema field names, each value of its field's `type`"),
        schema=SCHEMA,
        returns=BYTES,
        infeasible=["message"],
        example={"message": {"prompt": "hi", "max_tokens": 300, "model": "qwen", "seed": 0}, "schema": EX_SCHEMA}),
    "decode": Fn(
        data=List(Int(ge=0, le=255), note="一段完整、合法的编码（见上）", note_en="a complete, valid encoding (see above)"),
        schema=SCHEMA,
        returns=Map(Str(), Either(Int(ge=0), Str())),
        infeasible=["data"],
        example={"data": [10, 4, 113, 119, 101, 110, 16, 172, 2, 26, 2, 104, 105], "schema": EX_SCHEMA}),
    "shared_prefix": Fn(
        a=BYTES, b=BYTES,
        returns=Int(ge=0),
        example={"a": [10, 4, 113, 119], "b": [10, 4, 100]}),
}
