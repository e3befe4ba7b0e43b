"""Parameter domains of 171 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, Int, List, Str

DESIRED = Dict({"replicas": Int(ge=0), "version": Str(nonempty=True), "max_surge": Int(ge=0),
                "max_unavailable": Int(ge=0)}, note="`max_surge + max_unavailable ≥ 1`",
               note_en="`max_surge + max_unavailable >= 1`")
OBSERVED = List(Dict({"name": Str(nonempty=True), "version": Str(nonempty=True), "ready": Bool()}),
                note="`name` 互不相同", note_en="distinct `name`s")
EXAMPLE_DESIRED = {"replicas": 3, "version": "v2", "max_surge": 1, "max_unavailable": 1}
EXAMPLE_OBSERVED = [{"name": "v1-0", "version": "v1", "ready": True}, {"name": "v1-1", "version": "v1", "ready": False},
                    {"name": "v2-x", "version": "v2", "ready": True}]

FUNCTIONS = {
    "reconcile": Fn(
        desired=DESIRED, observed=OBSERVED,
        returns=Dict({"create": Int(ge=0), "delete": List(Str())}),
        example={"desired": EXAMPLE_DESIRED, "observed": EXAMPLE_OBSERVED}),
    "converge": Fn(
        desired=DESIRED, observed=OBSERVED, max_rounds=Int(ge=0),
        returns=Dict({"rounds": Int(ge=-1), "min_ready": Int(ge=0), "pods": List(Str())}),
        example={"desired": EXAMPLE_DESIRED, "observed": EXAMPLE_OBSERVED, "max_rounds": 20}),
}
