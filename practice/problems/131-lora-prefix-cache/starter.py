"""131. 按块哈希的前缀缓存（按 LoRA 隔离）。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 131
"""

def run_prefix_cache(capacity_blocks, block_size, requests):
    """Look up then insert each request's full blocks; one record per request."""
    raise NotImplementedError
