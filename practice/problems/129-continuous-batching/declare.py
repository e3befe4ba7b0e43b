"""Parameter domains of 129 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Dict, Fn, Int, List

ID = Any(note="请求的编号（原样写进 `work` 和 `admitted`）", note_en="the request's id (copied into `work` and `admitted`)")
RUNNING = List(Dict({"id": ID, "input_len": Int(ge=1), "output_len": Int(ge=1), "prompt_done": Int(ge=0),
                     "generated": Int(ge=0)}, open=True, note="`prompt_done` 不能大于 `input_len`",
                    note_en="`prompt_done` may not exceed `input_len`"))
WAITING = List(Dict({"id": ID, "input_len": Int(ge=1), "output_len": Int(ge=1)}, open=True))
CONFIG = Dict({"max_num_batched_tokens": Int(ge=1), "max_num_seqs": Int(ge=1), "kv_capacity_tokens": Int(ge=1)})

FUNCTIONS = {
    "schedule_step": Fn(
        running=RUNNING, waiting=WAITING, kv_used=Int(ge=0), config=CONFIG,
        returns=Dict({"work": List(List(Any(), min_len=2, max_len=2)), "admitted": List(), "tokens": Int(ge=0),
                      "context": Int(ge=0), "pairs": Int(ge=0), "kv_used": Int(ge=0)}),
        rules=["按 `config`、`kv_used`、`running`、`waiting` 的顺序检查，先报前面的"],
        rules_en=["checked in the order `config`, `kv_used`, `running`, `waiting`; the first bad one is reported"],
        # the first running request starts at 0 so that input_len = 1 (the bound) stays a valid call
        example={"running": [{"id": 1, "input_len": 12, "output_len": 3, "prompt_done": 0, "generated": 0},
                             {"id": 0, "input_len": 5, "output_len": 4, "prompt_done": 5, "generated": 2}],
                 "waiting": [{"id": 2, "input_len": 6, "output_len": 2}], "kv_used": 24,
                 "config": {"max_num_batched_tokens": 8, "max_num_seqs": 4, "kv_capacity_tokens": 40}}),
}
