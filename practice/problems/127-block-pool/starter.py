"""127. 块池：分配、fork 与写时复制。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 127
"""

def run_block_pool(num_blocks, block_size, ops):
    """Run the operations on a pool of ``num_blocks`` blocks; one record per operation."""
    raise NotImplementedError
