"""Parameter domains of 156 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

FUNCTIONS = {
    "group_kv_blocks": Fn(
        prompt_len=Int(ge=1), output_lens=List(Int(ge=0), min_len=1), block_size=Int(ge=1),
        returns=Dict({"shared": Int(ge=1), "unshared": Int(ge=1)}),
        example={"prompt_len": 1000, "output_lens": [300, 2000, 50, 900], "block_size": 16}),
    "rollout_prefill_tokens": Fn(
        prompt_lens=List(Int(ge=1)), n=Int(ge=1), block_size=Int(ge=1),
        returns=Dict({"without_cache": Int(ge=0), "with_cache": Int(ge=0), "saved_fraction": Real(ge=0, le=1)}),
        example={"prompt_lens": [1000, 512, 17], "n": 16, "block_size": 16}),
}
