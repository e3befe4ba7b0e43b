"""Reference solution for 180: how an inference engine with platform plugins (vLLM's scheme) picks
its platform, and which implementation of a custom op runs on it."""

FALLBACK = {"cuda": ["cuda"], "rocm": ["hip", "cuda"], "cpu": ["cpu"], "xpu": ["xpu"], "tpu": ["tpu"],
            "oot": ["oot"]}


def _group(name, plugins):
    ok = isinstance(plugins, list) and all(
        isinstance(p, dict) and set(p) == {"name", "returns", "raises"} and isinstance(p["name"], str) and p["name"]
        and (p["returns"] is None or (isinstance(p["returns"], str) and p["returns"])) and isinstance(p["raises"], bool)
        for p in plugins)
    if not ok or len({p["name"] for p in plugins}) != len(plugins):
        raise ValueError(f"{name} must be a list of {{name, returns: a class path or None, raises: bool}} with "
                         f"distinct names, got {plugins!r}")


def _activated(plugins):
    return sorted(p["name"] for p in plugins if not p["raises"] and p["returns"] is not None)


def resolve_platform(builtin, plugins, allowed):
    """Out-of-tree plugins (only those in `allowed` unless it is None) win over built-in ones; a
    plugin is activated when it returns a class path without raising; two activated in the deciding
    group is an error; none at all is the unspecified platform."""
    _group("builtin", builtin)
    _group("plugins", plugins)
    if allowed is not None and (not isinstance(allowed, list) or any(not isinstance(a, str) for a in allowed)):
        raise ValueError(f"allowed must be None or a list of plugin names, got {allowed!r}")
    loaded = [p for p in plugins if allowed is None or p["name"] in allowed]
    for source, group in (("plugin", loaded), ("builtin", builtin)):
        active = _activated(group)
        if len(active) >= 2:
            return {"platform": None, "source": source, "activated": active, "error": True}
        if len(active) == 1:
            chosen = next(p for p in group if p["name"] == active[0])
            return {"platform": chosen["returns"], "source": source, "activated": active, "error": False}
    return {"platform": "UnspecifiedPlatform", "source": "unspecified", "activated": [], "error": False}


def choose_impl(impls, platform, enabled):
    """A custom op's forward: when custom ops are disabled, the native one; otherwise the first
    implementation the op has along the platform's chain (ROCm tries hip, then cuda), else native."""
    if not isinstance(impls, list) or "native" not in impls or any(not isinstance(i, str) or not i for i in impls):
        raise ValueError(f"impls must be a list of implementation names that includes 'native', got {impls!r}")
    if platform not in FALLBACK:
        raise ValueError(f"platform must be one of {sorted(FALLBACK)}, got {platform!r}")
    if not isinstance(enabled, bool):
        raise ValueError(f"enabled must be True or False, got {enabled!r}")
    if enabled:
        for name in FALLBACK[platform]:
            if name in impls:
                return name
    return "native"
