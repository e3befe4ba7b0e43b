"""Parameter domains of 163 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Real

COSTS = dict(fixed_s=Real(ge=0), per_token_s=Real(gt=0), mtp_layer_frac=Real(ge=0))
EXAMPLE_COSTS = {"fixed_s": 0.015, "per_token_s": 0.0001, "mtp_layer_frac": 1 / 61}

FUNCTIONS = {
    "mtp_step_s": Fn(
        batch=Int(ge=1), depth=Int(ge=0), **COSTS,
        returns=Real(gt=0),
        example={"batch": 128, "depth": 1, **EXAMPLE_COSTS}),
    "mtp_rate": Fn(
        batch=Int(ge=1), depth=Int(ge=0), alpha=Real(ge=0, le=1), **COSTS,
        returns=Dict({"tpot_s": Real(gt=0), "tokens_per_s": Real(gt=0)}),
        example={"batch": 128, "depth": 1, "alpha": 0.85, **EXAMPLE_COSTS}),
    "best_batch": Fn(
        tpot_slo_s=Real(gt=0), depth=Int(ge=0), alpha=Real(ge=0, le=1), **COSTS, max_batch=Int(ge=1),
        returns=Dict({"batch": Int(ge=0), "tokens_per_s": Real(ge=0)}),
        example={"tpot_slo_s": 0.025, "depth": 1, "alpha": 0.85, **EXAMPLE_COSTS, "max_batch": 512}),
}
