# The README's two commands: `make demo` and `make test`. Both set up .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck imports pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
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
