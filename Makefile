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

# Unit tests, the notebooks under nbval, and the judge's maintainer check.
test: $(TESTS)
	$(BIN)/python practice/judge.py check --mutants
	$(BIN)/python -m pytest tests $(if $(NOTEBOOKS),--nbval-lax $(NOTEBOOKS))

test-fast: $(TESTS)
	$(BIN)/python -m pytest tests -x -q

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
