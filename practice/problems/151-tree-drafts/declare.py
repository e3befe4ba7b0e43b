"""Parameter domains of 151 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

PARENT_NOTE = "第 `i` 项是 −1 或小于 `i`"
PARENT_NOTE_EN = "item `i` is -1 or less than `i`"

FUNCTIONS = {
    "tree_attention": Fn(
        parents=List(Int(ge=-1), note=PARENT_NOTE, note_en=PARENT_NOTE_EN),
        returns=Dict({"depth": List(Int(ge=1)), "mask": List(List(Int(ge=0, le=1)))}),
        example={"parents": [-1, 0, 0, 1, -1]}),
    "verify_greedy": Fn(
        nodes=List(Dict({"parent": Int(ge=-1), "token": Int(ge=0)}),
                   note="第 `i` 项的 `parent` 是 −1 或小于 `i`",
                   note_en="item `i`'s `parent` is -1 or less than `i`"),
        target=List(Int(ge=0), min_len=1),
        returns=Dict({"accepted": List(Int(ge=0)), "tokens": List(Int(ge=0), min_len=1)}),
        rules=["`len(target) = len(nodes) + 1`（报 `target`）"],
        rules_en=["`len(target) = len(nodes) + 1` (reported as `target`)"],
        example={"nodes": [{"parent": -1, "token": 5}, {"parent": 0, "token": 7}, {"parent": 0, "token": 8},
                           {"parent": 2, "token": 3}, {"parent": -1, "token": 9}],
                 "target": [5, 8, 1, 2, 3, 4]}),
    "best_tree": Fn(
        rank_probs=List(Real(gt=0, le=1), min_len=1, note="非增，且和 ≤ 1", note_en="non-increasing, summing to <= 1"),
        size=Int(ge=0),
        returns=Dict({"parents": List(Int(ge=-1)), "ranks": List(Int(ge=0)), "expected_tokens": Real(ge=1)}),
        example={"rank_probs": [0.5], "size": 6}),
}
