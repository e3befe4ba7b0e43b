"""126. 延迟指标：TTFT、TPOT、ITL 与 goodput。

Write the three functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 126
"""
import math


def request_metrics(arrival, token_times):
    """Return {"ttft", "tpot", "itl"} for one request (seconds; itl is a list)."""
    raise NotImplementedError


def percentile(values, p):
    """Nearest-rank percentile: float(sorted(values)[ceil(p * n / 100) - 1])."""
    raise NotImplementedError


def summarize(requests, ttft_slo, tpot_slo, p=99):
    """Return {"ttft_p", "tpot_p", "itl_p", "slo_ok", "goodput"} over the requests."""
    raise NotImplementedError
