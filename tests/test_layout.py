"""The package layout: `sim` needs numpy only, `course` holds the notebooks' helpers, and the
extras in pyproject.toml and the Makefile say what each part needs."""

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import sim

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
COURSE_ONLY = ("matplotlib", "ipywidgets", "IPython", "course", "ray")

IMPORT_ALL_OF_SIM = """
import importlib, json, pkgutil, sys
import sim
names = [m.name for m in pkgutil.walk_packages(sim.__path__, "sim.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "loaded": sorted(sys.modules)}))
"""


def _names(requirements):
    return {re.split(r"[<>=!~\[ ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_importing_every_sim_module_loads_no_plotting_widgets_or_ray():
    run = subprocess.run([sys.executable, "-c", IMPORT_ALL_OF_SIM], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert {"sim.capacity", "sim.planning", "sim.sweep", "sim.cli", "sim.executors"} <= set(out["modules"])
    loaded = {name.split(".")[0] for name in out["loaded"]}
    assert not loaded & set(COURSE_ONLY), f"importing sim loaded {sorted(loaded & set(COURSE_ONLY))}"


def test_no_sim_module_is_shadowed_by_its_function():
    assert callable(sim.plan) and sim.plan is sim.planning.plan
    assert sim.max_rate is sim.capacity.max_rate
    assert importlib.util.find_spec("sim.plan") is None


def test_course_helpers_left_sim():
    for name in ("panel", "plots", "explain"):
        assert importlib.util.find_spec(f"sim.{name}") is None
        assert (ROOT / "course" / f"{name}.py").is_file()
    # the panels compute live: no precomputed table anywhere
    table = "panel" + "_table"                # spelled apart: `git grep` for it finds nothing
    assert importlib.util.find_spec(f"sim.{table}") is None
    assert not (ROOT / "course" / f"{table}.py").exists()


def test_the_simulator_installs_with_numpy_only():
    assert _names(PYPROJECT["project"]["dependencies"]) == {"numpy"}


def test_extras_cover_what_each_part_imports():
    assert {"matplotlib", "ipywidgets", "jupyterlab", "ipykernel", "pytest"} <= _names(EXTRAS["course"])
    assert _names(EXTRAS["fast"]) == {"numba"} and "numba" in _names(EXTRAS["course"])
    assert _names(EXTRAS["course"]) | {"pytest-timeout", "pytest-xdist", "hypothesis", "nbval"} <= _names(EXTRAS["test"])
    assert _names(EXTRAS["ray"]) == {"ray"}


def test_make_lab_installs_the_course_and_make_test_the_tests_and_ray():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = dict(re.findall(r"^\$\((\w+)\): pyproject.toml\n(?:\t.*\n)*?\t\$\(PIP\) -e '(\.\[[\w,]+\])'",
                               makefile, flags=re.M))
    assert installs == {"COURSE": ".[course]", "TESTS": ".[test,ray]"}
    assert re.search(r"^lab: \$\(COURSE\)$", makefile, flags=re.M)
    assert re.search(r"^test: \$\(TESTS\)$", makefile, flags=re.M)


def test_make_test_runs_in_parallel_with_each_notebook_on_one_worker():
    """`make test` spreads the suite over processes, handing out whole files: a notebook's cells
    run in one kernel under nbval and must stay on one worker, in order."""
    import subprocess

    dry = subprocess.run(["make", "-n", "test", "JOBS=3"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    runs = [line.split() for line in dry.splitlines() if " pytest " in f" {line} "]
    assert len(runs) == 1, dry
    args = runs[0]
    assert args[args.index("-n") + 1] == "3"
    assert args[args.index("--dist") + 1] == "loadfile"
    assert "--nbval-lax" in args and "tests" in args


def test_make_lab_trusts_every_notebook(tmp_path):
    """`make lab` signs the course's notebooks before opening them (saved widgets render only in
    trusted notebooks); running its trust command marks every notebook trusted."""
    import subprocess
    import sys

    from nbformat import read
    from nbformat.sign import NotebookNotary

    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    trust = [line.split() for line in dry.splitlines() if "jupyter trust" in line]
    assert trust and sorted(trust[0][2:]) == notebooks
    assert dry.index("jupyter trust") < dry.index("jupyter lab")
    env = {"JUPYTER_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "nbformat.sign", *notebooks], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    notary = NotebookNotary(data_dir=str(tmp_path))
    for name in notebooks:
        assert notary.check_signature(read(ROOT / name, as_version=4)), f"{name} is not trusted"
