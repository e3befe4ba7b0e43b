"""Parameter domains of 126 (rendered into the statement's 输入检查 block; see practice/README.md)."""
from declkit import Dict, Fn, List, Real

ORDER = "非递减，第一个不早于 `arrival`"
ORDER_EN = "non-decreasing, the first not before `arrival`"
TIMES = List(Real(), kinds=("list", "tuple"), min_len=1, note=ORDER, note_en=ORDER_EN)
SLO = Real(gt=0)
P = Real(gt=0, le=100)

FUNCTIONS = {
    "request_metrics": Fn(
        arrival=Real(), token_times=TIMES,
        returns=Dict({"ttft": Real(ge=0), "tpot": Real(ge=0), "itl": List(Real(ge=0))}),
        example={"arrival": 1.0, "token_times": [1.25, 1.5, 1.5]}),
    "percentile": Fn(
        values=List(Real(), kinds=("list", "tuple"), min_len=1), p=P,
        returns=Real(),
        example={"values": [1.0, 2.0, 3.0, 4.0], "p": 50}),
    "summarize": Fn(
        requests=List(Dict({"arrival": Real(report="arrival"),
                            "token_times": List(Real(), kinds=("list", "tuple"), min_len=1, note=ORDER,
                                                note_en=ORDER_EN, report="token_times")}, open=True),
                      min_len=1),
        ttft_slo=SLO, tpot_slo=SLO, p=P,
        returns=Dict({"ttft_p": Real(ge=0), "tpot_p": Real(ge=0), "itl_p": Real(ge=0), "slo_ok": Real(ge=0, le=1),
                      "goodput": Real(ge=0)}),
        rules=["最后一个 token 必须晚于最早的到达（持续时间 > 0），否则报 `requests`"],
        rules_en=["the last token must come after the first arrival (a duration > 0), else `requests`"],
        example={"requests": [{"arrival": 0.0, "token_times": [0.2, 0.24, 0.28, 0.33]},
                              {"arrival": 0.1, "token_times": [0.7, 0.76, 0.81]},
                              {"arrival": 0.5, "token_times": [0.9]}],
                 "ttft_slo": 0.5, "tpot_slo": 0.05, "p": 90}),
}
