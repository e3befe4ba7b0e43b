# The problems' tests only run inside the judge's sandbox (they import ``submission``); keep a
# plain ``pytest practice`` from collecting them.
collect_ignore_glob = ["problems/*", "sandbox/*", "workspace/*"]
