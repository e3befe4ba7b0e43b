"""180. 平台插件。

Write the functions below; see problem.md for the rules and the worked example.
Judge with:  python practice/judge.py 180
"""


def resolve_platform(builtin, plugins, allowed):
    """Return {"platform": class path or None, "source": str, "activated": [...], "error": bool}."""
    raise NotImplementedError


def choose_impl(impls, platform, enabled):
    """Return the name of the implementation that runs."""
    raise NotImplementedError
