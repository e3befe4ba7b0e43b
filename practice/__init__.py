"""Practice problems and their judge for the LLM serving course.

Command line: ``python practice/judge.py 184``. In a notebook: ``%load_ext practice``, then a
cell that starts with ``%%judge 184``.
"""


def load_ipython_extension(ipython):
    from .notebook import register
    register(ipython)
