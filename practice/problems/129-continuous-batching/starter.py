"""129. 连续批处理调度器：课程的步进规则。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 129
"""

def schedule_step(running, waiting, kv_used, config):
    """Which requests compute how many tokens this step, and who is admitted (the step rule)."""
    raise NotImplementedError
