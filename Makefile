# The README's two commands: `make demo` and `make test`. Both set up .venv on a fresh machine.
# `make demo` installs the package and its runtime dependencies only; `make test` adds the dev
# extra (services' clients, notebooks, LangGraph Server, linters) on top. `make check` is a
# contributor's loop of a few minutes; `make extra EXTRA=...` adds an optional part.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

PYTEST_ARGS ?=

.PHONY: demo extra test check lint typecheck imports pytest pytest-fast bench clean

# No pip inside the venv until `make test` needs one: the demo's install runs the host's pip
# (pip >= 22.3, `--python`), which spares ensurepip's time; without one, the venv gets its own.
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

# --no-compile: the demo imports a fraction of what it installs; Python compiles that on use.
DEMO_INSTALL := install --quiet --disable-pip-version-check --no-compile -e .
EXTRA_INSTALL = install --quiet --disable-pip-version-check --no-compile -e ".[$(EXTRA)]"

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(PYTHON) -m pip --python $(BIN)/python $(DEMO_INSTALL) 2>/dev/null || \
	  { $(BIN)/python -m ensurepip --default-pip >/dev/null && $(BIN)/pip $(DEMO_INSTALL); }
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m ensurepip --upgrade --default-pip >/dev/null
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python -m examples.demo

# An optional part into the checkout's .venv, as the demo installed the package:
# `make extra EXTRA=console` (several: EXTRA=workers,postgres). The demo's venv has no pip, so a
# bare `pip install` there would run the host's pip and install outside the venv.
EXTRA ?=
extra: $(DEMO_STAMP)
	@test -n "$(EXTRA)" || { echo 'make extra: name one, such as EXTRA=console' >&2; exit 2; }
	$(PYTHON) -m pip --python $(BIN)/python $(EXTRA_INSTALL) 2>/dev/null || \
	  { $(BIN)/python -m ensurepip --default-pip >/dev/null && $(BIN)/pip $(EXTRA_INSTALL); }

lint: $(STAMP)
	$(BIN)/ruff check sagagraph tests examples bench notebooks
	$(BIN)/ruff format --check sagagraph tests examples bench notebooks

typecheck: $(STAMP)
	$(BIN)/mypy

# The import direction of docs/architecture.md: layers, a kernel that imports only errors, no cycles.
imports: $(STAMP)
	$(BIN)/lint-imports

# Serial by default (CI's gate): the kill fleets hold their processes' timings best alone. On a
# quiet machine `make test PYTEST_ARGS="-n 2 --dist loadgroup"` spreads the suite over two cores.
pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck imports pytest

# The fast loop: lint, types, import contracts and the tests that need no service, corpus,
# browser or kill fleet and are not slow, chosen by markers (tests/conftest.py marks a test by
# the service and corpus fixtures it takes), spread over the cores by pytest-xdist. SAGAGRAPH_TEST_SERVICES=none fails a test that reaches
# PostgreSQL or RabbitMQ without its marker, so the split stays honest as tests are added.
FAST := not (postgres or rabbitmq or corpus or browser or kill_fleet or slow)
XDIST := -n auto --dist loadgroup

pytest-fast: $(STAMP)
	SAGAGRAPH_TEST_SERVICES=none $(BIN)/pytest -m "$(FAST)" $(XDIST) $(PYTEST_ARGS)

check: lint typecheck imports pytest-fast

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) outputs .mypy_cache .ruff_cache .pytest_cache
