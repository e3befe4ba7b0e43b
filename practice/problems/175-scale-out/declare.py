"""Parameter domains of 175 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'cold_start_s': Fn(
        weight_bytes=Real(gt=0),
        source=Str(choices=['local_nvme', 'network_storage', 'peer_gpu']),
        init_s=Real(ge=0),
        concurrent=Int(ge=1),
        shared_gbs=Optional(Real(gt=0)),
        returns=Real(),
        example={'weight_bytes': 70600000000.0,
                 'source': 'local_nvme',
                 'init_s': 0.0,
                 'concurrent': 1,
                 'shared_gbs': None}),
    'desired_instances': Fn(
        qps=Real(gt=0),
        latency_s=Real(gt=0),
        target_outstanding=Real(gt=0),
        returns=Int(),
        example={'qps': 200, 'latency_s': 22.0, 'target_outstanding': 32}),
    'scale_out': Fn(
        qps_now=Real(gt=0),
        ramp_qps_per_s=Real(ge=0),
        per_instance_qps=Real(gt=0),
        instances_now=Int(ge=0),
        interval_s=Real(ge=0),
        cold_start_s=Real(ge=0),
        returns=Dict({'lead_s': Real(), 'qps_at_ready': Real(), 'instances_needed': Int(), 'warm_spares': Int()}),
        example={'qps_now': 200,
                 'ramp_qps_per_s': 0.5,
                 'per_instance_qps': 12,
                 'instances_now': 17,
                 'interval_s': 30,
                 'cold_start_s': 70.08571428571429}),
}
