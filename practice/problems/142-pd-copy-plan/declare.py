"""Parameter domains of 142 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, Int, List

PAIRS = List(List(Int(ge=0), min_len=2, max_len=2),
             note="各项的第一个数互不相同，第二个数也互不相同",
             note_en="the first numbers of the pairs are distinct, and so are the second numbers")
COUNT = Int(ge=1)
TP = Int(ge=1)
TP_RULE = "`prefill_tp`、`decode_tp` 都必须整除 `num_kv_heads` 或是它的整数倍（报各自的名字）"
TP_RULE_EN = "`prefill_tp` and `decode_tp` each divide `num_kv_heads` or are a multiple of it (each reported by its name)"

FUNCTIONS = {
    "copy_plan": Fn(
        block_pairs=PAIRS, block_bytes=Int(ge=1), cached_blocks=Int(ge=0),
        returns=List(List(Int(ge=0), min_len=3, max_len=3)),
        rules=["`cached_blocks` ≤ `len(block_pairs)`（报 `cached_blocks`）"],
        rules_en=["`cached_blocks` <= `len(block_pairs)` (reported as `cached_blocks`)"],
        example={"block_pairs": [[12, 3], [13, 4], [14, 5], [15, 9], [40, 10], [41, 11], [7, 12]],
                 "block_bytes": 16384, "cached_blocks": 1}),
    "tp_plan": Fn(
        num_kv_heads=COUNT, prefill_tp=TP, decode_tp=TP,
        returns=List(List(List(Int(ge=0), min_len=3, max_len=3))),
        rules=[TP_RULE], rules_en=[TP_RULE_EN],
        example={"num_kv_heads": 8, "prefill_tp": 8, "decode_tp": 2}),
    "rank_bytes": Fn(
        num_kv_heads=COUNT, prefill_tp=TP, decode_tp=TP, tokens=COUNT, layers=COUNT, head_dim=COUNT,
        dtype_bytes=COUNT,
        returns=Dict({"send_bytes": List(Int(ge=0)), "recv_bytes": List(Int(ge=0))}),
        rules=[TP_RULE], rules_en=[TP_RULE_EN],
        example={"num_kv_heads": 8, "prefill_tp": 8, "decode_tp": 4, "tokens": 3000, "layers": 80,
                 "head_dim": 128, "dtype_bytes": 2}),
}
