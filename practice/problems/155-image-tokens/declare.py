"""Parameter domains of 155 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Str

FUNCTIONS = {
    "qwen_vl_tokens": Fn(
        height=Int(ge=1), width=Int(ge=1), min_pixels=Int(ge=1), max_pixels=Int(ge=1),
        returns=Dict({"height": Int(ge=28), "width": Int(ge=28), "tokens": Int(ge=1)}),
        rules=["长边与短边之比 `max(height, width) / min(height, width)` ≤ 200（报 `height`）",
               "`max_pixels` ≥ `min_pixels`（报 `max_pixels`）"],
        rules_en=["the aspect ratio `max(height, width) / min(height, width)` is at most 200 (reported as `height`)",
                  "`max_pixels` >= `min_pixels` (reported as `max_pixels`)"],
        infeasible=["height", "max_pixels"],
        example={"height": 1080, "width": 1920, "min_pixels": 3136, "max_pixels": 1003520}),
    "tile_tokens": Fn(
        height=Int(ge=1), width=Int(ge=1), detail=Str(choices=["low", "high"]),
        returns=Dict({"tiles": Int(ge=0), "tokens": Int(ge=85)}),
        example={"height": 1080, "width": 1920, "detail": "high"}),
}
