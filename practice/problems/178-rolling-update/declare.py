"""Parameter domains of 178 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, Optional, Real, Str

SOURCES = ["local_nvme", "network_storage", "peer_gpu"]
FLEET = dict(instances=Int(ge=1), qps=Real(gt=0), per_instance_qps=Real(gt=0))

FUNCTIONS = {
    "max_unavailable": Fn(
        **FLEET, returns=Int(ge=0),
        rules=["`needed = ceil(qps / per_instance_qps)` 大于 `instances` 时（现有实例扛不住）报 `qps`"],
        rules_en=["`needed = ceil(qps / per_instance_qps)` above `instances` (the fleet cannot carry the load): `qps`"],
        example={"instances": 12, "qps": 160, "per_instance_qps": 16}),
    "plan_update": Fn(
        **FLEET, weight_bytes=Real(gt=0), source=Str(choices=SOURCES), drain_s=Real(ge=0), init_s=Real(ge=0),
        max_surge=Int(ge=0), shared_gbs=Optional(Real(gt=0)),
        returns=Dict({"max_unavailable": Int(ge=0), "per_wave": Int(ge=1), "waves": Int(ge=1),
                      "wave_s": Real(ge=0), "duration_s": Real(ge=0), "peak_instances": Int(ge=1)}),
        rules=["按参数列表的顺序检查，先报前面的；`needed > instances` 时报 `qps`（同 `max_unavailable`）",
               "一个都不能下线（`max_unavailable` 为 0）且 `max_surge` 为 0 时报 `max_surge`"],
        rules_en=["checked in parameter order (the first bad one is reported); `needed > instances`: `qps`",
                  "no instance may go down (`max_unavailable` is 0) and `max_surge` is 0: `max_surge`"],
        example={"instances": 12, "qps": 160, "per_instance_qps": 16, "weight_bytes": 70.6e9,
                 "source": "network_storage", "drain_s": 30, "init_s": 60, "max_surge": 1, "shared_gbs": 100.0}),
}
