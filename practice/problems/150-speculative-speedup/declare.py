"""Parameter domains of 150 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'expected_tokens': Fn(
        alpha=Real(ge=0, le=1),
        k=Int(ge=0),
        returns=Real(),
        example={'alpha': 0.7, 'k': 0}),
    'speedup': Fn(
        alpha=Real(ge=0, le=1),
        k=Int(ge=1),
        c=Real(ge=0),
        returns=Real(),
        example={'alpha': 0.6, 'k': 3, 'c': 0.1}),
    'best_draft_len': Fn(
        alpha=Real(ge=0, le=1),
        c=Real(ge=0),
        k_max=Int(ge=1),
        returns=Dict({'k': Int(), 'speedup': Real()}),
        example={'alpha': 0.8, 'c': 0.05, 'k_max': 16}),
}
