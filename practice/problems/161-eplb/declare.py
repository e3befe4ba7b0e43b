"""Parameter domains of 161 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

LOADS = List(Int(ge=0), min_len=1)
EXAMPLE_LOADS = [900, 300, 100, 100, 600, 200, 150, 50]

FUNCTIONS = {
    "replicate": Fn(
        loads=LOADS, num_redundant=Int(ge=0),
        returns=List(Int(ge=1)),
        example={"loads": EXAMPLE_LOADS, "num_redundant": 4}),
    "pack": Fn(
        weights=List(Real(ge=0), min_len=1), num_packs=Int(ge=1),
        returns=Dict({"members": List(List(Int(ge=0))), "totals": List(Real(ge=0))}),
        rules=["`num_packs` 整除 `len(weights)`（报 `num_packs`）"],
        rules_en=["`num_packs` divides `len(weights)` (reported as `num_packs`)"],
        example={"weights": [300.0, 225.0, 100.0, 150.0], "num_packs": 2}),
    "place": Fn(
        loads=LOADS, num_gpus=Int(ge=1), redundant_per_gpu=Int(ge=0),
        returns=Dict({"gpu_experts": List(List(Int(ge=0))), "gpu_load": List(Real(ge=0)),
                      "imbalance": Real(ge=1)}),
        rules=["`num_gpus` 整除 `len(loads)`（报 `num_gpus`）"],
        rules_en=["`num_gpus` divides `len(loads)` (reported as `num_gpus`)"],
        example={"loads": EXAMPLE_LOADS, "num_gpus": 4, "redundant_per_gpu": 1}),
}
