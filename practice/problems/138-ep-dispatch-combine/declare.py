"""Parameter domains of 138 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

IDS = List(List(Int(ge=0), min_len=1), min_len=1,
           note="每行一样长（`k`），一行里的专家互不相同，都小于 `num_experts`",
           note_en="rows of one length `k`, distinct expert ids below `num_experts` in each row")
INT_MATRIX = List(List(Int(ge=0)))

FUNCTIONS = {
    "dispatch": Fn(
        topk_ids=IDS,
        token_rank=List(Int(ge=0), min_len=1, note="长度等于 token 数，每项小于 `ep_size`",
                        note_en="one item per token, each below `ep_size`"),
        num_experts=Int(ge=1), ep_size=Int(ge=1),
        returns=Dict({"pairs": INT_MATRIX, "copies": INT_MATRIX, "recv": List(INT_MATRIX),
                      "expert_load": List(Int(ge=0))}),
        rules=["`ep_size` 整除 `num_experts`（报 `ep_size`）"],
        rules_en=["`ep_size` divides `num_experts` (reported as `ep_size`)"],
        example={"topk_ids": [[1, 6], [2, 3], [7, 4], [0, 5]], "token_rank": [0, 0, 1, 1], "num_experts": 8,
                 "ep_size": 4}),
    "combine": Fn(
        received=List(Dict({"token": Int(ge=0), "slot": Int(ge=0), "out": List(Real(), min_len=1)}), min_len=1,
                      note="`token` 小于 token 数 `T`，`slot` 小于 `k`，各项的 `out` 一样长",
                      note_en="`token` below the `T` tokens, `slot` below `k`, every `out` of one length"),
        topk_weights=List(List(Real(), min_len=1), min_len=1, note="每行一样长（`k`）",
                          note_en="rows of one length `k`"),
        returns=List(List(Real())),
        example={"received": [{"token": 0, "slot": 1, "out": [1.0, 2.0]}, {"token": 0, "slot": 0, "out": [3.0, -1.0]},
                              {"token": 2, "slot": 0, "out": [0.5, 0.5]}],
                 "topk_weights": [[0.6, 0.4], [0.5, 0.5], [1.0, 0.0]]}),
}
