"""Parameter domains of 165 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Real

GPU = Dict({"sms": Int(ge=1), "peak_flops": Real(gt=0), "bandwidth": Real(gt=0), "bw_sat_sms": Int(ge=1),
            "mfu": Real(gt=0, le=1), "step_overhead": Real(ge=0)})
MODEL = Dict({"params": Real(gt=0), "weight_bytes": Real(gt=0), "kv_bytes_per_token": Real(ge=0)})
H100 = {"sms": 132, "peak_flops": 989e12, "bandwidth": 3.35e12, "bw_sat_sms": 44, "mfu": 0.5, "step_overhead": 0.0005}
M8B = {"params": 8e9, "weight_bytes": 16e9, "kv_bytes_per_token": 131072}

FUNCTIONS = {
    "decode_step_s": Fn(
        gpu=GPU, model=MODEL, decode_sms=Int(ge=1), batch=Int(ge=1), context=Int(ge=0),
        returns=Real(gt=0),
        rules=["`decode_sms` ≤ `gpu[\"sms\"]`（报 `decode_sms`）"],
        rules_en=["`decode_sms` <= `gpu[\"sms\"]` (reported as `decode_sms`)"],
        example={"gpu": H100, "model": M8B, "decode_sms": 1, "batch": 128, "context": 128000}),
    "split_sms": Fn(
        gpu=GPU, model=MODEL, batch=Int(ge=1), context=Int(ge=0), tpot_slo_s=Real(gt=0),
        returns=Dict({"decode_sms": Int(ge=-1), "decode_step_s": Real(gt=0), "prefill_tokens_per_s": Real(ge=0)}),
        example={"gpu": H100, "model": M8B, "batch": 128, "context": 128000, "tpot_slo_s": 0.03}),
}
