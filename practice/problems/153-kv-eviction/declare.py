"""Parameter domains of 153 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real, Str

POSITIONS = List(Int(ge=0))
SCORES = List(List(Int(ge=1), min_len=1), note="第 `t` 项（从 0 数）的长度是 `t + 1`",
              note_en="item `t` (from 0) has length `t + 1`")

FUNCTIONS = {
    "streaming_keep": Fn(
        seq_len=Int(ge=0), sink=Int(ge=0), window=Int(ge=0),
        returns=POSITIONS,
        example={"seq_len": 10, "sink": 2, "window": 3}),
    "run_eviction": Fn(
        scores=SCORES, budget=Int(ge=1), policy=Str(choices=["streaming", "h2o"]), keep_recent=Int(ge=0),
        returns=Dict({"kept": POSITIONS, "evicted": POSITIONS, "captured": List(Real(gt=0, le=1))}),
        rules=["`keep_recent` < `budget`（报 `keep_recent`）"],
        rules_en=["`keep_recent` < `budget` (reported as `keep_recent`)"],
        example={"scores": [[1], [3, 1], [3, 1, 1], [3, 1, 1, 5], [3, 1, 1, 6, 1], [3, 1, 1, 6, 1, 2],
                            [3, 1, 1, 7, 1, 1, 1]], "budget": 4, "policy": "h2o", "keep_recent": 1}),
}
