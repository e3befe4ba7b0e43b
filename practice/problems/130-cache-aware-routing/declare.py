"""Parameter domains of 130 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Dict, Fn, Int, List, Real

FUNCTIONS = {
    "route_requests": Fn(
        requests=List(Dict({"prompt": List(Any(), min_len=1), "hold": Int(ge=0)})),
        num_workers=Int(ge=1), cache_threshold=Real(ge=0, le=1), balance_abs=Int(ge=0), balance_rel=Real(ge=1),
        returns=List(Int(ge=0)),
        example={"requests": [{"prompt": [1, 2, 3, 4, 5], "hold": 5}, {"prompt": [9, 9, 9], "hold": 5},
                              {"prompt": [1, 2, 3, 4, 6], "hold": 5}],
                 "num_workers": 2, "cache_threshold": 0.5, "balance_abs": 4, "balance_rel": 1.5}),
}
