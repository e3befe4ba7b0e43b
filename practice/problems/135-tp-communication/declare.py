"""Parameter domains of 135 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real, Tuple

POS, NONNEG, COUNT = Real(gt=0), Real(ge=0), Int(ge=1)
MEASURED = List(Tuple(Int(ge=2, report="tp"), Real(ge=0, report="alpha_us"), Real(gt=0, report="beta_gbs"),
                      names=("tp", "alpha_us", "beta_gbs")),
                kinds=("list", "tuple"), note="tp 不能重复", note_en="no tp twice")

FUNCTIONS = {
    "allreduce_us": Fn(
        message_bytes=NONNEG, alpha_us=NONNEG, beta_gbs=POS, returns=Real(ge=0),
        example={"message_bytes": 1048576, "alpha_us": 4.37, "beta_gbs": 144.3}),
    "tp_comm_ms": Fn(
        tokens=COUNT, layers=COUNT, hidden=COUNT, tp=COUNT, alpha_us=NONNEG, beta_gbs=POS, activation_bytes=POS,
        returns=Real(ge=0),
        example={"tokens": 256, "layers": 80, "hidden": 8192, "tp": 2, "alpha_us": 4.37, "beta_gbs": 144.3,
                 "activation_bytes": 2}),
    "best_tp": Fn(
        tokens=COUNT, weight_bytes=POS, layers=COUNT, hidden=COUNT, gpu_bandwidth_gbs=POS, gpu_memory_gb=POS,
        measured=MEASURED, activation_bytes=POS,
        returns=Dict({"tp": Int(ge=1), "step_ms": Real(gt=0), "read_ms": Real(gt=0), "comm_ms": Real(ge=0)}),
        infeasible=["gpu_memory_gb"],
        rules=["权重在 1 和 `measured` 里的任何 tp 下都放不进显存时报 `gpu_memory_gb`"],
        rules_en=["the weights fit at none of 1 and the measured tp values: `gpu_memory_gb`"],
        example={"tokens": 64, "weight_bytes": 141e9, "layers": 80, "hidden": 8192, "gpu_bandwidth_gbs": 3350,
                 "gpu_memory_gb": 80, "measured": [[2, 2.718, 263.9], [4, 3.493, 162.1], [8, 4.37, 144.3]],
                 "activation_bytes": 2}),
}
