"""Parameter domains of 169 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Either, Fn, Int, List, Optional, Real, Str

FULL = Dict({"kind": Str(choices=["full"]), "count": Int(ge=1), "bytes_per_token": Real(gt=0)})
WINDOW = Dict({"kind": Str(choices=["window"]), "count": Int(ge=1), "bytes_per_token": Real(gt=0),
               "window": Int(ge=1)})
SPARSE = Dict({"kind": Str(choices=["sparse"]), "count": Int(ge=1), "bytes_per_token": Real(gt=0),
               "top_k": Int(ge=1), "index_bytes_per_token": Real(ge=0)})
LAYERS = List(Either(FULL, WINDOW, SPARSE), kinds=("list", "tuple"), min_len=1)
EXAMPLE_LAYERS = [{"kind": "full", "count": 8, "bytes_per_token": 576},
                  {"kind": "sparse", "count": 8, "bytes_per_token": 576, "top_k": 2048, "index_bytes_per_token": 128},
                  {"kind": "window", "count": 32, "bytes_per_token": 2048, "window": 4096}]

FUNCTIONS = {
    "layer_bytes_per_token": Fn(
        attention=Str(choices=["gqa", "mla"]), dtype_bytes=Real(gt=0),
        kv_heads=Int(ge=1), head_dim=Int(ge=1), kv_rank=Int(ge=1), rope_dim=Int(ge=0),
        when={"kv_heads": {"attention": "gqa"}, "head_dim": {"attention": "gqa"},
              "kv_rank": {"attention": "mla"}, "rope_dim": {"attention": "mla"}},
        returns=Real(gt=0),
        example={"attention": "gqa", "dtype_bytes": 2, "kv_heads": 8, "head_dim": 128, "kv_rank": 0,
                 "rope_dim": 0},
        also=[{"attention": "mla", "dtype_bytes": 1, "kv_heads": 0, "head_dim": 0, "kv_rank": 512,
               "rope_dim": 64}]),
    "kv_bytes": Fn(
        context=Int(ge=0), layers=LAYERS,
        returns=Dict({"stored_bytes": Real(ge=0), "read_bytes": Real(ge=0)}),
        example={"context": 1000000, "layers": EXAMPLE_LAYERS}),
    "max_context": Fn(
        budget_bytes=Real(ge=0), layers=LAYERS,
        returns=Optional(Int(ge=0)),
        example={"budget_bytes": 8e9, "layers": EXAMPLE_LAYERS}),
}
