"""164. 按预测的 TTFT 路由与拒绝。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 164
"""


def route(input_len, instances, ttft_slo_s):
    """Return {"instance": the instance with the smallest predicted TTFT or -1, "ttft_s": that prediction}."""
    raise NotImplementedError


def route_stream(requests, instances, ttft_slo_s):
    """Return {"instance": [...], "ttft_s": [...], "rejected": count} for requests in arrival order."""
    raise NotImplementedError
