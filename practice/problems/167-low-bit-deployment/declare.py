"""Parameter domains of 167 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'bytes_per_param': Fn(
        fmt=Str(choices=['bf16', 'fp16', 'fp8', 'int8', 'int4', 'fp4', 'mxfp4']),
        group_size=Int(ge=1),
        returns=Real(),
        example={'fmt': 'bf16', 'group_size': 128}),
    'min_gpus': Fn(
        params=Real(gt=0),
        fmt=Str(choices=['bf16', 'fp16', 'fp8', 'int8', 'int4', 'fp4', 'mxfp4']),
        gpu_mem_gb=Real(gt=0),
        kv_reserve_gb=Real(ge=0),
        mem_util=Real(gt=0, le=1),
        group_size=Int(ge=1),
        choices=List(Int(ge=1), kinds=('list', 'tuple'), min_len=1),
        returns=Int(),
                rules=['`choices` 里最多的 GPU 也放不下时报 `choices`'],
        rules_en=['not even the most GPUs in `choices` hold it: `choices`'],
        infeasible=['choices'],
example={'params': 405000000000.0,
                 'fmt': 'int4',
                 'gpu_mem_gb': 80,
                 'kv_reserve_gb': 100.0,
                 'mem_util': 0.9,
                 'group_size': 128,
                 'choices': (1, 2, 4, 8)}),
    'decode_floor_ms': Fn(
        params=Real(gt=0),
        fmt=Str(choices=['bf16', 'fp16', 'fp8', 'int8', 'int4', 'fp4', 'mxfp4']),
        gpus=Int(ge=1),
        gpu_bandwidth_gbs=Real(gt=0),
        group_size=Int(ge=1),
        returns=Real(),
        example={'params': 70000000000.0, 'fmt': 'bf16', 'gpus': 8, 'gpu_bandwidth_gbs': 3350, 'group_size': 128}),
}
