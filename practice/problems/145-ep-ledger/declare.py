"""Parameter domains of 145 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Real

TOPK_RULE = "`topk` ≤ `num_experts`（报 `topk`）"
TOPK_RULE_EN = "`topk` <= `num_experts` (reported as `topk`)"

FUNCTIONS = {
    "group_hit_prob": Fn(
        num_experts=Int(ge=1), topk=Int(ge=1), groups=Int(ge=1),
        returns=Real(ge=0, le=1),
        rules=[TOPK_RULE, "`groups` 整除 `num_experts`（报 `groups`）"],
        rules_en=[TOPK_RULE_EN, "`groups` divides `num_experts` (reported as `groups`)"],
        example={"num_experts": 256, "topk": 8, "groups": 64}),
    "ep_ledger": Fn(
        tokens_per_gpu=Int(ge=1), num_experts=Int(ge=1), topk=Int(ge=1), gpus=Int(ge=1), gpus_per_node=Int(ge=1),
        hidden=Int(ge=1), moe_layers=Int(ge=1), dispatch_bytes=Real(gt=0), combine_bytes=Real(gt=0),
        nvlink_gbs=Real(gt=0), rdma_gbs=Real(gt=0),
        returns=Dict({k: Real(ge=0) for k in ("nvlink_copies", "rdma_copies", "nvlink_bytes", "rdma_bytes",
                                                "nvlink_s", "rdma_s")}),
        rules=[TOPK_RULE, "`gpus` 整除 `num_experts`（报 `gpus`）", "`gpus_per_node` 整除 `gpus`（报 `gpus_per_node`）"],
        rules_en=[TOPK_RULE_EN, "`gpus` divides `num_experts` (reported as `gpus`)",
                  "`gpus_per_node` divides `gpus` (reported as `gpus_per_node`)"],
        example={"tokens_per_gpu": 128, "num_experts": 256, "topk": 8, "gpus": 64, "gpus_per_node": 8, "hidden": 7168,
                 "moe_layers": 58, "dispatch_bytes": 1, "combine_bytes": 2, "nvlink_gbs": 160, "rdma_gbs": 50}),
}
