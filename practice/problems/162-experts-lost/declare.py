"""Parameter domains of 162 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

PLACEMENT = List(List(Int(ge=0)), min_len=1, note="专家编号都小于 `num_experts`",
                 note_en="expert ids below `num_experts`")
EXAMPLE = [[0, 1, 4], [2, 3, 5], [4, 5, 0], [6, 7, 2]]

FUNCTIONS = {
    "lost_experts": Fn(
        gpu_experts=PLACEMENT, num_experts=Int(ge=1),
        failed=List(Int(ge=0), note="互不相同，都小于 GPU 数 `len(gpu_experts)`",
                    note_en="distinct, each below the GPU count `len(gpu_experts)`"),
        returns=Dict({"lost": List(Int(ge=0)), "replicas_left": List(Int(ge=0))}),
        example={"gpu_experts": EXAMPLE, "num_experts": 8, "failed": [2, 1]}),
    "token_loss_share": Fn(
        num_experts=Int(ge=1), topk=Int(ge=1), lost=Int(ge=0),
        returns=Real(ge=0, le=1),
        rules=["`topk` ≤ `num_experts`（报 `topk`）", "`lost` ≤ `num_experts`（报 `lost`）"],
        rules_en=["`topk` <= `num_experts` (reported as `topk`)", "`lost` <= `num_experts` (reported as `lost`)"],
        example={"num_experts": 256, "topk": 8, "lost": 4}),
    "loss_probability": Fn(
        gpu_experts=PLACEMENT, num_experts=Int(ge=1), failures=Int(ge=0),
        returns=Real(ge=0, le=1),
        rules=["`failures` ≤ GPU 数 `len(gpu_experts)`（报 `failures`）"],
        rules_en=["`failures` <= the GPU count `len(gpu_experts)` (reported as `failures`)"],
        example={"gpu_experts": EXAMPLE, "num_experts": 8, "failures": 2}),
}
