# The course's two entry points: `make lab` opens it, `make test` checks it. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(wildcard notebooks/*.ipynb)

.PHONY: venv lab test test-fast bench notebooks clean

venv: $(STAMP)

# Rebuilt only when the project's dependencies change; a no-op otherwise.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

lab: venv
	$(BIN)/jupyter lab --notebook-dir=notebooks $(LAB_ARGS) $(firstword $(NOTEBOOKS))

# Unit tests, the notebooks under nbval, and the judge's maintainer check.
test: venv
	$(BIN)/python practice/judge.py check
	$(BIN)/python -m pytest tests $(if $(NOTEBOOKS),--nbval-lax $(NOTEBOOKS))

test-fast: venv
	$(BIN)/python -m pytest tests -x -q

bench: venv
	$(BIN)/python benchmarks/bench_sim.py
	$(BIN)/python benchmarks/bench_plan.py
	$(BIN)/python benchmarks/bench_validation.py
	$(BIN)/python benchmarks/bench_judge.py

# Re-execute the chapter notebooks in order and store their outputs and widget state.
notebooks: venv
	$(BIN)/python notebooks/run_notebooks.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
