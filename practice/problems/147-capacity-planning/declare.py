"""Parameter domains of 147 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'max_qps_under_slo': Fn(
        qps=List(Real(gt=0), min_len=1, note='严格递增', note_en='strictly increasing'),
        ttft_p99=List(Real(ge=0), note='与 `qps` 等长', note_en='as long as `qps`'),
        tpot_p99=List(Real(ge=0), note='与 `qps` 等长', note_en='as long as `qps`'),
        ttft_slo=Real(gt=0),
        tpot_slo=Real(gt=0),
        returns=Real(),
                rules=['三个列表不等长时报 `ttft_p99` 或 `tpot_p99`'],
        rules_en=['lists of different lengths: `ttft_p99` or `tpot_p99`'],
example={'qps': [4, 8, 12, 16, 20],
                 'ttft_p99': [0.35, 0.42, 0.61, 1.4, 5.2],
                 'tpot_p99': [0.021, 0.026, 0.034, 0.046, 0.071],
                 'ttft_slo': 2.0,
                 'tpot_slo': 0.05}),
    'replicas': Fn(
        peak_qps=Real(ge=0),
        per_replica_qps=Real(gt=0),
        headroom=Real(gt=0, le=1),
        failures=Int(ge=0),
        returns=Int(),
        example={'peak_qps': 3, 'per_replica_qps': 0.5, 'headroom': 1.0, 'failures': 0}),
    'concurrency': Fn(
        qps=Real(ge=0),
        ttft_s=Real(ge=0),
        tpot_s=Real(ge=0),
        output_len=Int(ge=1),
        returns=Real(),
        example={'qps': 0, 'ttft_s': 0, 'tpot_s': 0, 'output_len': 1}),
}
