"""Parameter domains of 152 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Any, Bool, Dict, Either, Fn, Int, List, Map, Optional, Real, Str

FUNCTIONS = {
    'verify': Fn(
        p=List(List(Real(ge=0), min_len=1, note='和与 1 相差不超过 1e-6', note_en='sums to 1 within 1e-6'), min_len=1, note='所有行（包括 `q` 的）一样长；行数是 `q` 的行数加 1', note_en='rows (and those of `q`) of one length; one row more than `q`'),
        q=List(List(Real(ge=0), min_len=1, note='和与 1 相差不超过 1e-6', note_en='sums to 1 within 1e-6'), note='行的长度与 `p` 的相同', note_en='rows as long as those of `p`'),
        draft=List(Int(ge=0), note='长度等于 `q` 的行数；`draft[i]` 小于词表大小且 `q[i][draft[i]] > 0`', note_en='one token per row of `q`; `draft[i]` below the vocabulary size and `q[i][draft[i]] > 0`'),
        seed=Int(ge=0),
        returns=Dict({'accepted': Int(), 'tokens': List(Int())}),
                infeasible=['p', 'q', 'draft'],
example={'p': [[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6]],
                 'q': [[0.3, 0.5, 0.2], [0.25, 0.25, 0.5]],
                 'draft': [1, 2],
                 'seed': 8}),
    'expected_accepted': Fn(
        p=List(List(Real(ge=0), min_len=1, note='和与 1 相差不超过 1e-6', note_en='sums to 1 within 1e-6'), min_len=1, note='所有行（包括 `q` 的）一样长；行数是 `q` 的行数加 1', note_en='rows (and those of `q`) of one length; one row more than `q`'),
        q=List(List(Real(ge=0), min_len=1, note='和与 1 相差不超过 1e-6', note_en='sums to 1 within 1e-6'), note='行的长度与 `p` 的相同', note_en='rows as long as those of `p`'),
        returns=Real(),
                infeasible=['p', 'q'],
example={'p': [[0.5, 0.5000009], [0.5, 0.5]], 'q': [[0.4999991, 0.5]]}),
}
