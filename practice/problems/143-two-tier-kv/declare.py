"""Parameter domains of 143 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'run_two_tier': Fn(
        gpu_blocks=Int(ge=1),
        cpu_blocks=Int(ge=0),
        ops=List(Either(Int(), Str()), note='块号（布尔值不算）', note_en='block ids (not bools)'),
        returns=List(Dict({'where': Str(), 'dropped': Optional(Real()), 'gpu': List(Int()), 'cpu': List(Any())})),
        example={'gpu_blocks': 2, 'cpu_blocks': 1, 'ops': [1, 2, 3, 1]}),
    'read_time_ms': Fn(
        records=List(Dict({'where': Str(choices=['gpu', 'cpu', 'miss'])}, open=True)),
        block_bytes=Real(gt=0),
        pcie_gbs=Real(gt=0),
        recompute_ms=Real(ge=0),
        returns=Real(),
        example={'records': [{'where': 'cpu'}, {'where': 'miss'}, {'where': 'cpu'}],
                 'block_bytes': 0.5,
                 'pcie_gbs': 0.5,
                 'recompute_ms': 0.25}),
}
