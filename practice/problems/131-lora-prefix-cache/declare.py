"""Parameter domains of 131 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Dict, Fn, Int, List, Optional, Str

FUNCTIONS = {
    "run_prefix_cache": Fn(
        capacity_blocks=Int(ge=1), block_size=Int(ge=1),
        requests=List(Dict({"adapter": Optional(Str()), "tokens": List(Any())})),
        returns=List(Dict({"hit_tokens": Int(ge=0), "evicted": Int(ge=0), "cached_blocks": Int(ge=0)})),
        example={"capacity_blocks": 4, "block_size": 2,
                 "requests": [{"adapter": "sql", "tokens": [1, 2, 3, 4, 5]},
                              {"adapter": "sql", "tokens": [1, 2, 3, 4, 9, 9]},
                              {"adapter": "chat", "tokens": [1, 2, 3, 4]}]}),
}
