"""Parameter domains of 176 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Map, Optional, Real, Str

JOBS = List(Dict({"name": Str(nonempty=True), "pods": Int(ge=1), "gpus_per_pod": Int(ge=1)}),
            note="`name` 互不相同", note_en="distinct `name`s")
FREE = List(Int(ge=0), min_len=1)
EXAMPLE = {"nodes_free": [8, 8, 4], "jobs": [{"name": "a", "pods": 3, "gpus_per_pod": 4},
                                             {"name": "b", "pods": 3, "gpus_per_pod": 4},
                                             {"name": "c", "pods": 2, "gpus_per_pod": 2}]}

FUNCTIONS = {
    "gang_schedule": Fn(
        nodes_free=FREE, jobs=JOBS,
        returns=Dict({"placed": Map(Str(), Optional(List(Int(ge=0)))), "free": List(Int(ge=0))}),
        example=EXAMPLE),
    "pod_by_pod": Fn(
        nodes_free=FREE, jobs=JOBS,
        returns=Dict({"placed": Map(Str(), List(Optional(Int(ge=0)))), "free": List(Int(ge=0)),
                      "stranded": Int(ge=0)}),
        example=EXAMPLE),
    "fragmentation": Fn(
        free=List(Int(ge=0)), size=Int(ge=1),
        returns=Real(ge=0, le=1),
        example={"free": [6, 3, 1], "size": 4}),
}
