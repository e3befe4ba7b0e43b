"""Parameter domains of 174 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, Int, List, Optional, Real

FUNCTIONS = {
    "startup": Fn(
        load_s=Real(ge=0), initial_delay_s=Real(ge=0), period_s=Real(gt=0), failure_threshold=Int(ge=1),
        returns=Dict({"ready_s": Optional(Real(ge=0)), "killed_s": Optional(Real(ge=0))}),
        example={"load_s": 180, "initial_delay_s": 10, "period_s": 10, "failure_threshold": 18}),
    "shutdown": Fn(
        requests=List(Dict({"arrival_s": Real(ge=0), "duration_s": Real(ge=0)})),
        sigterm_s=Real(ge=0), lb_delay_s=Real(ge=0), grace_s=Real(ge=0), accept_after_sigterm=Bool(),
        returns=Dict({k: Int(ge=0) for k in ("completed", "cut", "refused", "rerouted")}),
        example={"requests": [{"arrival_s": 0, "duration_s": 20}, {"arrival_s": 5, "duration_s": 40},
                              {"arrival_s": 11, "duration_s": 30}],
                 "sigterm_s": 10, "lb_delay_s": 5, "grace_s": 30, "accept_after_sigterm": True}),
}
