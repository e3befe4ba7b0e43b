"""Parameter domains of 146 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'chain_hashes': Fn(
        tokens=List(Int(ge=0)),
        block_size=Int(ge=1),
        seed=Int(ge=0, lt=2**64),
        returns=List(Int()),
        example={'tokens': [1, 2, 3, 4, 5], 'block_size': 2, 'seed': 0}),
    'tiered_lookup': Fn(
        tokens=List(Int(ge=0)),
        block_size=Int(ge=1),
        tiers=List(Dict({'name': Str(note='各层互不相同', note_en='distinct across tiers'), 'hashes': List(Any()), 'ms_per_block': Real(ge=0)}), min_len=1),
        seed=Int(ge=0, lt=2**64),
        returns=Dict({'hit_tokens': Int(), 'load_from': List(Str()), 'per_tier': Dict({'gpu': Int(), 'cpu': Int()}), 'load_ms': Real()}),
        example={'tokens': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                 'block_size': 2,
                 'tiers': [{'name': 'gpu',
                            'hashes': [590682968308805178, 11910549588909886942, 11879451155103665021],
                            'ms_per_block': 0.0},
                           {'name': 'cpu', 'hashes': [10952987118811563378], 'ms_per_block': 1.0}],
                 'seed': 0}),
}
