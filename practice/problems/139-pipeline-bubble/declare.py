"""Parameter domains of 139 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'bubble_fraction': Fn(
        stages=Int(ge=1),
        microbatches=Int(ge=1),
        returns=Real(),
        example={'stages': 1, 'microbatches': 5}),
    'pipeline_ms': Fn(
        stages=Int(ge=1),
        microbatches=Int(ge=1),
        stage_ms=Real(gt=0),
        p2p_ms=Real(ge=0),
        returns=Real(),
        example={'stages': 4, 'microbatches': 8, 'stage_ms': 2.5, 'p2p_ms': 0.0}),
    'min_microbatches': Fn(
        stages=Int(ge=1),
        max_bubble=Real(gt=0, le=1),
        returns=Int(),
        example={'stages': 8, 'max_bubble': 0.1}),
    'pp_decode': Fn(
        stages=Int(ge=1),
        groups=Int(ge=1),
        stage_ms=Real(gt=0),
        returns=Dict({'tpot_ms': Real(), 'utilization': Real(), 'group_steps_per_s': Real()}),
        example={'stages': 4, 'groups': 2, 'stage_ms': 5.0}),
}
