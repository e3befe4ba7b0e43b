"""Parameter domains of 159 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List, Real

ROWS = List(List(Real(), min_len=1), min_len=1, note="每行一样长", note_en="all rows have one length")
STACK = List(ROWS, min_len=1, note="每个头的矩阵形状相同", note_en="every head's matrix has one shape")
SHAPES = ["`q_rope` 的行数等于 `q_nope` 的行数 `H`（报 `q_rope`）",
          "`k_rope` 是 `C × rope_dim`：行数等于 `c` 的行数，列数等于 `q_rope` 的列数（报 `k_rope`）",
          "`w_uk` 是 `H × kv_rank × nope_dim`（`kv_rank` 是 `c` 的列数，`nope_dim` 是 `q_nope` 的列数；报 `w_uk`）",
          "`w_uv` 是 `H × kv_rank × v_dim`（报 `w_uv`）"]
SHAPES_EN = ["`q_rope` has `H` rows, as `q_nope` (reported as `q_rope`)",
             "`k_rope` is `C x rope_dim`: the rows of `c`, the columns of `q_rope` (reported as `k_rope`)",
             "`w_uk` is `H x kv_rank x nope_dim` (`kv_rank` the columns of `c`, `nope_dim` those of `q_nope`; "
             "reported as `w_uk`)",
             "`w_uv` is `H x kv_rank x v_dim` (reported as `w_uv`)"]
EXAMPLE = {"q_nope": [[1.0, 0.0], [0.5, -1.0]], "q_rope": [[1.0], [0.0]],
           "c": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "k_rope": [[0.0], [1.0], [-1.0]],
           "w_uk": [[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [-1.0, 0.0]]],
           "w_uv": [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, -1.0]]]}
MATRIX = List(List(Real()))
PARAMS = dict(q_nope=ROWS, q_rope=ROWS, c=ROWS, k_rope=ROWS, w_uk=STACK, w_uv=STACK)

FUNCTIONS = {
    "mla_expand": Fn(**PARAMS, returns=MATRIX, rules=SHAPES, rules_en=SHAPES_EN, example=EXAMPLE),
    "mla_absorb": Fn(**PARAMS, returns=Dict({"q_latent": MATRIX, "o_latent": MATRIX, "out": MATRIX}),
                     rules=SHAPES, rules_en=SHAPES_EN, example=EXAMPLE),
    "kv_bytes_per_token": Fn(
        heads=Int(ge=1), kv_rank=Int(ge=1), nope_dim=Int(ge=1), rope_dim=Int(ge=0), v_dim=Int(ge=1),
        dtype_bytes=Int(ge=1),
        returns=Dict({"mla": Int(ge=1), "expanded": Int(ge=1), "ratio": Real(gt=0)}),
        example={"heads": 128, "kv_rank": 512, "nope_dim": 128, "rope_dim": 64, "v_dim": 128, "dtype_bytes": 2}),
}
