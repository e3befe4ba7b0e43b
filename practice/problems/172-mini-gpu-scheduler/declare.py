"""Parameter domains of 172 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Map, Optional, Str

NODES = List(Dict({"name": Str(nonempty=True), "gpus": Int(ge=1), "gpu_type": Str(nonempty=True)}), min_len=1,
             note="`name` 互不相同", note_en="distinct `name`s")
PODS = List(Dict({"name": Str(nonempty=True), "gpus": Int(ge=1), "gpu_type": Optional(Str(nonempty=True))}),
            note="`name` 互不相同", note_en="distinct `name`s")

FUNCTIONS = {
    "schedule": Fn(
        nodes=NODES, pods=PODS, strategy=Str(choices=["binpack", "spread"]),
        returns=Dict({"assignment": Map(Str(), Optional(Str())), "free": Map(Str(), Int(ge=0))}),
        example={"nodes": [{"name": "n1", "gpus": 8, "gpu_type": "H100"}, {"name": "n2", "gpus": 8, "gpu_type": "H100"}],
                 "pods": [{"name": "p1", "gpus": 2, "gpu_type": None}, {"name": "p2", "gpus": 4, "gpu_type": "H100"}],
                 "strategy": "spread"}),
    "still_fits": Fn(
        free=List(Int(ge=0)), sizes=List(Int(ge=1)),
        returns=List(Int(ge=0)),
        example={"free": [4, 4, 4], "sizes": [1, 2, 4, 8]}),
}
