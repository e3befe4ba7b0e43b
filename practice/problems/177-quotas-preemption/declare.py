"""Parameter domains of 177 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Either, Fn, Int, List, Map, Str

SUBMIT = Dict({"op": Str(choices=["submit"]), "job": Str(nonempty=True), "tenant": Str(nonempty=True),
               "gpus": Int(ge=1), "priority": Int()})
FINISH = Dict({"op": Str(choices=["finish"]), "job": Str(nonempty=True)})

FUNCTIONS = {
    "schedule": Fn(
        capacity=Int(ge=1),
        quotas=Map(Str(nonempty=True), Int(ge=0)),
        events=List(Either(SUBMIT, FINISH),
                    note="提交的作业名互不相同，`tenant` 在 `quotas` 里，`gpus` ≤ `capacity`；结束的是已经提交、还没结束的作业",
                    note_en="submitted job names are new, `tenant` is in `quotas`, `gpus` <= `capacity`; a finish names a "
                            "submitted, unfinished job"),
        returns=Dict({"log": List(List(Str(), min_len=2, max_len=2)), "running": List(Str()), "pending": List(Str())}),
        rules=["`quotas` 的值之和 ≤ `capacity`（报 `quotas`）"],
        rules_en=["the values of `quotas` add up to at most `capacity` (reported as `quotas`)"],
        example={"capacity": 8, "quotas": {"A": 2, "B": 6},
                 "events": [{"op": "submit", "job": "a1", "tenant": "A", "gpus": 4, "priority": 0},
                            {"op": "submit", "job": "b1", "tenant": "B", "gpus": 2, "priority": 0},
                            {"op": "finish", "job": "a1"}]}),
}
