"""Which saga a worker runs: a reference ``module:factory`` recorded with the saga.

A worker runs any saga definition, not only the paper: ``submit --app module:factory``
records the reference in the saga's input (``input["worker"]["app"]``), and a worker imports
``factory`` and calls it with the saga's input to get the saga to run, a
:class:`~sagagraph.saga.protocol.SagaDefinition` or an uncompiled LangGraph ``StateGraph``.
Nothing is pickled: the worker needs the same code installed, nothing more.

A factory that returns the same object for the same settings lets a worker compile each
graph once (the paper's caches by recorded settings).
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from sagagraph.errors import ConfigurationError
from sagagraph.saga.view import describe_error

SagaFactory = Callable[[Mapping[str, Any]], Any]
"""Given a saga's input, its definition (or uncompiled graph)."""

PAPER_APP = "sagagraph.cli.workers:paper_saga"
"""The reference of the paper saga, the default of ``submit`` and ``worker``."""
WORKER_KEY = "worker"
"""The key of the saga's input under which submit records ``{"app": ..., "queue": ...}``."""
_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_reference(reference: str) -> str:
    """``reference`` when it reads ``module:factory``; ConfigurationError (one line) else."""
    if not _REFERENCE.match(reference):
        raise ConfigurationError(
            f"--app {reference!r}: expected module:factory (a function from a saga's input "
            "to its SagaDefinition), e.g. examples.travel_booking.worker:travel_saga"
        )
    return reference


def load_factory(reference: str) -> SagaFactory:
    """Import the factory ``module:factory`` names; ConfigurationError (one line) when missing."""
    module_name, _, attribute = check_reference(reference).partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"--app {reference!r}: {describe_error(error)}") from None
    if not callable(found):
        raise ConfigurationError(f"--app {reference!r}: not a function")
    factory: SagaFactory = found
    return factory


def recorded_reference(saga_input: Mapping[str, Any]) -> str:
    """The reference a saga was submitted with (the paper's when it names none)."""
    recorded = saga_input.get(WORKER_KEY)
    app = recorded.get("app") if isinstance(recorded, Mapping) else None
    return str(app) if app else PAPER_APP


def as_graph(made: Any) -> Any:
    """The uncompiled graph a factory's result stands for (a definition is built)."""
    if hasattr(made, "compile"):
        return made
    from sagagraph.graph.builder import build_saga_graph

    return build_saga_graph(made)


class CompiledSagas:
    """Each saga's compiled graph on one checkpointer: built from its recorded reference, and
    compiled once per graph the factory returns."""

    def __init__(self, checkpointer: Any) -> None:
        self.checkpointer = checkpointer
        self._factories: dict[str, SagaFactory] = {}
        self._compiled: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def app_for(self, saga_input: Mapping[str, Any]) -> Any:
        reference = recorded_reference(saga_input)
        with self._lock:
            factory = self._factories.get(reference)
            if factory is None:
                factory = self._factories[reference] = load_factory(reference)
        made = factory(saga_input)
        with self._lock:
            known = self._compiled.get(id(made))
            if known is None or known[0] is not made:
                compiled = as_graph(made).compile(checkpointer=self.checkpointer)
                known = self._compiled[id(made)] = (made, compiled)
            return known[1]
