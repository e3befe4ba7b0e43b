"""Parameter domains of 170 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

SETUP = Dict({"params": Real(gt=0), "weight_bytes": Real(gt=0), "kv_bytes_per_token": Real(ge=0),
              "peak_flops": Real(gt=0), "bandwidth": Real(gt=0), "mfu": Real(gt=0, le=1),
              "step_overhead": Real(ge=0)})
EXAMPLE_SETUP = {"params": 8e9, "weight_bytes": 16e9, "kv_bytes_per_token": 131072, "peak_flops": 989e12,
                 "bandwidth": 3.35e12, "mfu": 0.5, "step_overhead": 0.0005}
ALPHA = Real(ge=0, le=1)

FUNCTIONS = {
    "spec_step_s": Fn(
        setup=SETUP, batch=Int(ge=1), context=Int(ge=0), k=Int(ge=0), draft_cost=Real(ge=0),
        returns=Real(gt=0),
        example={"setup": EXAMPLE_SETUP, "batch": 128, "context": 64000, "k": 2, "draft_cost": 0.05}),
    "best_k": Fn(
        setup=SETUP, batch=Int(ge=1), context=Int(ge=0), alpha=ALPHA, draft_cost=Real(ge=0), k_max=Int(ge=0),
        returns=Dict({"k": Int(ge=0), "tokens_per_s": Real(gt=0), "speedup": Real(ge=1)}),
        example={"setup": EXAMPLE_SETUP, "batch": 128, "context": 64000, "alpha": 0.6, "draft_cost": 0.05,
                 "k_max": 8}),
    "estimate_alpha": Fn(
        observations=List(List(Int(ge=0), min_len=2, max_len=2),
                          note="每项 `[k, accepted]` 满足 `accepted ≤ k`", note_en="each `[k, accepted]` has `accepted <= k`"),
        prior_alpha=ALPHA, prior_weight=Real(gt=0), decay=Real(gt=0, le=1),
        returns=List(Real(ge=0, le=1)),
        example={"observations": [[0, 0], [4, 1], [4, 4], [4, 2]], "prior_alpha": 0.7, "prior_weight": 10,
                 "decay": 0.9}),
}
