"""143. 两级 KV 缓存：GPU 与主机内存。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 143
"""

def run_two_tier(gpu_blocks, cpu_blocks, ops):
    """Serve block reads from a GPU tier backed by a CPU tier; one record per read."""
    raise NotImplementedError


def read_time_ms(records, block_bytes, pcie_gbs, recompute_ms):
    """Time to make the read blocks resident: host blocks over PCIe, missed blocks recomputed."""
    raise NotImplementedError
