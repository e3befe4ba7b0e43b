"""Parameter domains of 164 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

INSTANCE = Dict({"queued_tokens": Int(ge=0), "step_left_s": Real(ge=0), "s_per_token": Real(gt=0)})
INSTANCES = List(INSTANCE, min_len=1)
SLO = Real(gt=0)
EXAMPLE_INSTANCES = [{"queued_tokens": 4000, "step_left_s": 0.02, "s_per_token": 0.0001},
                     {"queued_tokens": 0, "step_left_s": 0.03, "s_per_token": 0.0002}]

FUNCTIONS = {
    "route": Fn(
        input_len=Int(ge=1), instances=INSTANCES, ttft_slo_s=SLO,
        returns=Dict({"instance": Int(ge=-1), "ttft_s": Real(ge=0)}),
        example={"input_len": 2000, "instances": EXAMPLE_INSTANCES, "ttft_slo_s": 1.0}),
    "route_stream": Fn(
        requests=List(Dict({"arrival_s": Real(ge=0, note="不小于前一个请求的 `arrival_s`",
                                              note_en="not before the previous request's `arrival_s`"),
                            "input_len": Int(ge=1)})),
        instances=INSTANCES, ttft_slo_s=SLO,
        returns=Dict({"instance": List(Int(ge=-1)), "ttft_s": List(Real(ge=0)), "rejected": Int(ge=0)}),
        example={"requests": [{"arrival_s": 0.0, "input_len": 2000}, {"arrival_s": 0.1, "input_len": 6000}],
                 "instances": EXAMPLE_INSTANCES, "ttft_slo_s": 1.0}),
}
