"""Parameter domains of 128 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Dict, Fn, Int, List

ENTRY = Dict({"seq": Any(note="序列的名字（原样写进 `order`）", note_en="the sequence's name (copied into `order`)"),
              "context": Int(ge=0), "new": Int(ge=1), "prompt_len": Int(ge=1), "blocks": List(Int(ge=0))})

FUNCTIONS = {
    "batch_layout": Fn(
        entries=List(ENTRY, min_len=1), block_size=Int(ge=1),
        returns=Dict({"order": List(), "num_decodes": Int(ge=0), "query_start_loc": List(Int(ge=0)),
                      "seq_lens": List(Int(ge=1)), "positions": List(Int(ge=0)), "slot_mapping": List(Int(ge=0)),
                      "logits_indices": List(Int(ge=0))}),
        infeasible=["entries"],
        rules=["块表装不下 `context + new` 个 token（`len(blocks) × block_size < context + new`）报 `entries`",
               "一个 prefill 块越过了提示词末尾（`context < prompt_len < context + new`）报 `entries`"],
        rules_en=["a block table that cannot hold `context + new` tokens: `entries`",
                  "a prefill chunk past the prompt's end (`context < prompt_len < context + new`): `entries`"],
        example={"entries": [{"seq": "p", "context": 4, "new": 6, "prompt_len": 10, "blocks": [3, 7, 1]},
                             {"seq": "d", "context": 6, "new": 1, "prompt_len": 5, "blocks": [0, 2]}],
                 "block_size": 4}),
}
