"""128. 一次混合前向的批布局。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 128
"""

def batch_layout(entries, block_size):
    """Order the step's sequences (decodes first) and build the flat metadata of one forward."""
    raise NotImplementedError
