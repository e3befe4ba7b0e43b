"""Parameter domains of 182 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Bool, Dict, Fn, Int, Real

MODEL = dict(params=Real(gt=0), weight_bits=Real(gt=0), context=Int(ge=0), kv_bytes_per_token=Real(ge=0))
EXAMPLE = {"params": 3.2e9, "weight_bits": 4.5, "context": 4096, "kv_bytes_per_token": 114688}

FUNCTIONS = {
    "memory_plan": Fn(
        **MODEL, ram_gb=Real(gt=0), reserved_gb=Real(ge=0),
        returns=Dict({"model_gb": Real(gt=0), "kv_gb": Real(ge=0), "free_gb": Real(), "fits": Bool()}),
        example={**EXAMPLE, "ram_gb": 8, "reserved_gb": 4.5}),
    "decode_tokens_per_s": Fn(
        **MODEL, bandwidth_gbs=Real(gt=0), efficiency=Real(gt=0, le=1),
        returns=Real(gt=0),
        example={**EXAMPLE, "bandwidth_gbs": 51.2, "efficiency": 0.7}),
    "prefill_s": Fn(
        prompt_tokens=Int(ge=1), params=Real(gt=0), tops=Real(gt=0), utilization=Real(gt=0, le=1),
        returns=Real(gt=0),
        example={"prompt_tokens": 1000, "params": 3.2e9, "tops": 35, "utilization": 0.3}),
}
