"""Parameter domains of 148 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'step_breakdown': Fn(
        tokens=Int(ge=0),
        context=Int(ge=0),
        setup=Dict({'params': Real(gt=0), 'weight_bytes': Real(ge=0), 'kv_bytes_per_token': Real(ge=0), 'peak_flops': Real(gt=0), 'bandwidth': Real(gt=0), 'mfu': Real(gt=0, le=1), 'step_overhead': Real(ge=0), 'comm_s_per_token': Real(ge=0), 'kv_serial': Real(ge=0, le=1)}),
        returns=Dict({'compute': Real(), 'memory': Real(), 'serial': Real(), 'overhead': Real(), 'comm': Real(), 'bound': Str(), 'total': Real()}),
        example={'tokens': 8,
                 'context': 16000,
                 'setup': {'params': 70000000000.0,
                           'weight_bytes': 140000000000.0,
                           'kv_bytes_per_token': 327680,
                           'peak_flops': 7912000000000000.0,
                           'bandwidth': 26800000000000.0,
                           'mfu': 0.5,
                           'step_overhead': 0.0005,
                           'comm_s_per_token': 0.0,
                           'kv_serial': 0.0}}),
    'overlap_timeline': Fn(
        gpu_ms=List(Real(ge=0), min_len=1),
        cpu_ms=List(Real(ge=0), note='与 `gpu_ms` 等长', note_en='as long as `gpu_ms`'),
        overlap=Bool(),
        returns=Dict({'gpu_start_ms': List(Real()), 'total_ms': Real(), 'gpu_idle_ms': Real()}),
        example={'gpu_ms': [10.0, 10.0, 10.0], 'cpu_ms': [4.0, 4.0, 4.0], 'overlap': True}),
}
