"""Parameter domains of 183 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

DUMPS = List(List(Real(), min_len=1), min_len=1)
RULE = ["`test` 与 `ref` 形状相同：层数相同，每层向量长度相同（报 `test`）"]
RULE_EN = ["`test` has the shape of `ref`: as many layers, vectors of the same lengths (reported as `test`)"]
REF = [[1.0, 2.0], [0.5, -1.0], [3.0, 0.0], [0.0, 0.0]]
TEST = [[1.0, 2.0], [0.5001, -1.0], [2.0, 1.0], [0.0, 0.1]]

FUNCTIONS = {
    "layer_errors": Fn(
        ref=DUMPS, test=DUMPS,
        returns=Dict({"rel_error": List(Real(ge=0)), "cosine": List(Real(ge=-1.0000001, le=1.0000001))}),
        rules=RULE, rules_en=RULE_EN,
        example={"ref": REF, "test": TEST}),
    "first_divergence": Fn(
        ref=DUMPS, test=DUMPS, tol=Real(gt=0),
        returns=Dict({"layer": Int(ge=-1), "rel_error": Real(ge=0)}),
        rules=RULE, rules_en=RULE_EN,
        example={"ref": REF, "test": TEST, "tol": 0.001}),
    "bisect_plan": Fn(
        num_layers=Int(ge=1), first_bad=Int(ge=-1),
        returns=Dict({"probes": List(Int(ge=0)), "layer": Int(ge=-1)}),
        rules=["`first_bad` < `num_layers`（报 `first_bad`）"],
        rules_en=["`first_bad` < `num_layers` (reported as `first_bad`)"],
        example={"num_layers": 61, "first_bad": 37}),
}
