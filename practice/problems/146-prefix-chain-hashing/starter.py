"""146. 前缀链式哈希与分层查找。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 146
"""

def chain_hashes(tokens, block_size, seed=0):
    """One 64-bit FNV-1a hash per full block, each folding in the hash of the block before."""
    raise NotImplementedError


def tiered_lookup(tokens, block_size, tiers, seed=0):
    """The longest cached prefix, block by block, each block from the fastest tier that has it."""
    raise NotImplementedError
