"""130. 感知缓存的请求路由。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 130
"""

def route_requests(requests, num_workers, *, cache_threshold=0.5, balance_abs=4, balance_rel=1.5):
    """The worker of every request, in order: longest cached prefix unless the pool is out of"""
    raise NotImplementedError
