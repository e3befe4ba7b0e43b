"""Parameter domains of 144 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'allreduce_time_us': Fn(
        algorithm=Str(choices=['one_shot', 'two_shot', 'ring', 'nvls']),
        message_bytes=Real(ge=0),
        gpus=Int(ge=2),
        alpha_us=Real(ge=0),
        link_gbs=Real(gt=0),
        returns=Real(),
        example={'algorithm': 'one_shot', 'message_bytes': 3145728, 'gpus': 2, 'alpha_us': 2.5, 'link_gbs': 450}),
    'choose_allreduce': Fn(
        message_bytes=Real(ge=0),
        gpus=Int(ge=2),
        alpha_us=Real(ge=0),
        link_gbs=Real(gt=0),
        topology=Str(choices=['ring', 'switch', 'nvls']),
        returns=Dict({'algorithm': Str(), 'time_us': Real()}),
        example={'message_bytes': 1048576, 'gpus': 8, 'alpha_us': 2.0, 'link_gbs': 450, 'topology': 'switch'}),
    'crossover_bytes': Fn(
        gpus=Int(ge=2),
        alpha_us=Real(ge=0),
        link_gbs=Real(gt=0),
        returns=Optional(Real()),
        example={'gpus': 2, 'alpha_us': 2.0, 'link_gbs': 450}),
    'bus_bandwidth_gbs': Fn(
        message_bytes=Real(gt=0),
        time_us=Real(gt=0),
        gpus=Int(ge=2),
        returns=Real(),
        example={'message_bytes': 268435456, 'time_us': 1864.6295703395701, 'gpus': 2}),
}
