"""The definition behind a compiled saga graph, so that the runners check a new saga's input.

``build_saga_graph`` (and the blackboard's builder) remember the definition of each graph
they build; a graph compiled from it keeps that graph as its public ``builder``.
``run_saga`` and ``arun_saga`` find the definition there and call its ``check_input`` before
anything is written (:func:`check_new_input`). Nothing is put in the graph itself: a node's
metadata would travel into every run's config and traces. A weak mapping: remembering a
graph never keeps it alive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from weakref import WeakKeyDictionary

from sagagraph.saga.protocol import SagaDefinition

_definitions: WeakKeyDictionary[Any, SagaDefinition] = WeakKeyDictionary()


def remember_definition(graph: Any, definition: SagaDefinition) -> None:
    """Record that ``graph`` (an uncompiled StateGraph) runs ``definition``."""
    _definitions[graph] = definition


def definition_of(app: Any) -> SagaDefinition | None:
    """The definition a compiled saga graph (or its uncompiled graph) runs; None when it was
    not built by sagagraph's builders."""
    builder = getattr(app, "builder", app)
    try:
        return _definitions.get(builder)
    except TypeError:  # neither hashable nor weakly referable: not a graph we built
        return None


def check_new_input(app: Any, input: Mapping[str, Any]) -> None:
    """Run the ``check_input`` of the definition behind ``app`` on a new saga's ``input``;
    InputError (from the check) when the saga cannot use it."""
    definition = definition_of(app)
    if definition is not None and definition.check_input is not None:
        definition.check_input(input)
