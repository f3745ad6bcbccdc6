# The README's two commands: `make demo` and `make test`. Both set up .venv on a fresh machine.
# `make demo` installs the package and its runtime dependencies only; `make test` adds the dev
# extra (services' clients, notebooks, LangGraph Server, linters) on top.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test lint typecheck imports pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# --no-compile: the demo imports a fraction of what it installs; Python compiles that on use.
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --no-compile -e .
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python -m examples.demo

lint: $(STAMP)
	$(BIN)/ruff check sagagraph tests examples bench notebooks
	$(BIN)/ruff format --check sagagraph tests examples bench notebooks

typecheck: $(STAMP)
	$(BIN)/mypy

# The import direction of docs/architecture.md: layers, a kernel that imports only errors, no cycles.
imports: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck imports pytest

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) outputs .mypy_cache .ruff_cache .pytest_cache
