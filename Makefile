# The course's two entry points: `make lab` opens it, `make test` checks it. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check
COURSE := $(VENV)/.installed-course
TESTS  := $(VENV)/.installed-test
NOTEBOOKS := $(wildcard notebooks/*.ipynb)

.PHONY: venv lab test test-fast bench notebooks clean

# `sim` alone needs numpy only (`pip install .`); the notebooks and the judge need the course extra,
# the tests the test extra (the course's packages too) and ray.
venv: $(TESTS)

# Each stamp is rebuilt only when the project's dependencies change; a no-op otherwise.
$(COURSE): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[course]'
	@touch $@

$(TESTS): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[test,ray]'
	@touch $@ $(COURSE)

# JupyterLab renders saved widgets (the panels, their charts) only in trusted notebooks, and a fresh
# clone's are not: trust the course's own notebooks (their signatures go to the user's Jupyter data
# folder) so the panels show on open. Run every cell to make the sliders live.
lab: $(COURSE)
	$(BIN)/jupyter trust $(NOTEBOOKS)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(LAB_ARGS) $(firstword $(NOTEBOOKS))

# Test processes (pytest-xdist): one per core, at most 4 (each holds a compiled engine, ~0.5 GB).
# A notebook's cells share one kernel, so tests are handed out whole files at a time.
JOBS   ?= $(shell $(PYTHON) -c 'import os; print(max(1, min(4, os.cpu_count() or 1)))')
PYTEST := $(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# Unit tests, the notebooks under nbval, and the judge's maintainer check with its mutants
# (tests/test_judge.py::test_maintainer_check_passes; `python practice/judge.py check --mutants`
# prints the same check problem by problem).
test: $(TESTS)
	$(PYTEST) tests $(if $(NOTEBOOKS),--nbval-lax $(NOTEBOOKS))

# The unit tests without the notebooks and the judge's mutants (a few minutes of the suite).
test-fast: $(TESTS)
	$(PYTEST) tests -x -q --deselect tests/test_judge.py::test_maintainer_check_passes

bench: venv
	$(BIN)/python benchmarks/bench_sim.py
	$(BIN)/python benchmarks/bench_panel.py
	$(BIN)/python benchmarks/bench_plan.py
	$(BIN)/python benchmarks/bench_validation.py
	$(BIN)/python benchmarks/bench_fleet.py
	$(BIN)/python benchmarks/bench_judge.py

# Re-execute the chapter notebooks in order and store their outputs and widget state.
notebooks: $(COURSE)
	$(BIN)/python notebooks/run_notebooks.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
