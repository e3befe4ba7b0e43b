"""Parameter domains of 141 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'transfer_s': Fn(
        input_len=Int(ge=1),
        kv_bytes_per_token=Real(gt=0),
        link_gbs=Real(gt=0),
        latency_s=Real(ge=0),
        returns=Real(),
        example={'input_len': 2000, 'kv_bytes_per_token': 327680, 'link_gbs': 50.0, 'latency_s': 0.001}),
    'exposed_s': Fn(
        input_len=Int(ge=1),
        kv_bytes_per_token=Real(gt=0),
        prefill_s=Real(gt=0),
        layers=Int(ge=1),
        link_gbs=Real(gt=0),
        latency_s=Real(ge=0),
        returns=Real(),
        example={'input_len': 2000,
                 'kv_bytes_per_token': 327680,
                 'prefill_s': 0.25,
                 'layers': 80,
                 'link_gbs': 50.0,
                 'latency_s': 0.001}),
    'link_load': Fn(
        qps=Real(gt=0),
        input_len=Int(ge=1),
        kv_bytes_per_token=Real(gt=0),
        decode_instances=Int(ge=1),
        nics_per_instance=Int(ge=1),
        nic_gbs=Real(gt=0),
        returns=Dict({'gbs_needed': Real(), 'per_instance_gbs': Real(), 'utilization': Real()}),
        example={'qps': 500,
                 'input_len': 1500,
                 'kv_bytes_per_token': 35136,
                 'decode_instances': 18,
                 'nics_per_instance': 8,
                 'nic_gbs': 50.0}),
}
