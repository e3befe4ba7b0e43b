"""Parameter domains of 184 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Real, Str

POS = Real(gt=0)
FRACTION = Real(gt=0, le=1)

FUNCTIONS = {
    "max_batch_by_kv": Fn(
        kv_budget_bytes=Real(note="≤ 0 时返回 0", note_en="0 is returned when it is <= 0"),
        kv_bytes_per_token=POS, avg_context=POS,
        returns=Int(ge=0),
        example={"kv_budget_bytes": 1000, "kv_bytes_per_token": 10, "avg_context": 10}),
    "decode_step_ms": Fn(
        batch=Int(ge=0), avg_context=POS, weight_bytes=POS, kv_bytes_per_token=POS, bandwidth_gbs=POS,
        overhead_ms=Real(ge=0),
        returns=Real(gt=0),
        example={"batch": 3, "avg_context": 2500.0, "weight_bytes": 140e9, "kv_bytes_per_token": 327680,
                 "bandwidth_gbs": 3350.0, "overhead_ms": 0.0}),
    "prefill_rps": Fn(
        input_len=Int(ge=1), params=POS, gpus_per_instance=Int(ge=1), gpu_tflops=POS, mfu=FRACTION,
        returns=Real(gt=0),
        example={"input_len": 2000, "params": 70e9, "gpus_per_instance": 8, "gpu_tflops": 989, "mfu": 0.4}),
    "plan": Fn(
        qps=POS, input_len=Int(ge=1), output_len=Int(ge=1), tpot_ms=POS, params=POS, weight_bytes=POS,
        kv_bytes_per_token=POS, gpus_per_instance=Int(ge=1), gpu_mem_gb=POS, gpu_bandwidth_gbs=POS,
        gpu_tflops=POS, mfu=FRACTION, mem_util=FRACTION, reserve_gb=Real(ge=0), overhead_ms=Real(ge=0),
        headroom=Real(ge=1),
        returns=Dict({"batch": Int(ge=1), "bound": Str(choices=["kv", "tpot"]), "step_ms": Real(gt=0),
                      "decode_rps": Real(gt=0), "decode_instances": Int(ge=1), "prefill_rps": Real(gt=0),
                      "prefill_instances": Int(ge=1), "gpus": Int(ge=1)}),
        rules=["不可行：显存放不下哪怕一条序列（显存允许的 batch < 1）报 `gpu_mem_gb`；batch = 1 时一步就超过了 `tpot_ms` 报 "
               "`tpot_ms`；两种都不可行时先报显存"],
        infeasible=["tpot_ms", "gpu_mem_gb"],
        rules_en=["infeasible: not even one sequence fits in memory (the memory's batch < 1): `gpu_mem_gb`; a batch "
                  "of 1 already takes longer than `tpot_ms` per step: `tpot_ms`; memory first when both"],
        example={"qps": 200, "input_len": 2000, "output_len": 500, "tpot_ms": 50, "params": 70e9,
                 "weight_bytes": 140e9, "kv_bytes_per_token": 327680, "gpus_per_instance": 8, "gpu_mem_gb": 80,
                 "gpu_bandwidth_gbs": 3350, "gpu_tflops": 989, "mfu": 0.4, "mem_util": 0.9, "reserve_gb": 4.0,
                 "overhead_ms": 0.0, "headroom": 1.3}),
}
