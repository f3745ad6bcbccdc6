"""What the builders remember of each graph: its definition (a new saga's input check) and hooks.

``build_saga_graph`` (and the blackboard's builder) remember the definition and the hooks of
each graph they build; a graph compiled from it keeps that graph as its public ``builder``.
``run_saga`` and ``arun_saga`` find the definition there and call its ``check_input`` before
anything is written (:func:`check_new_input`); every runner tells the graph's hooks what it
observes besides its nodes (:func:`hooks_of`). Nothing is put in the graph itself: a node's
metadata would travel into every run's config and traces. A weak mapping: remembering a graph
never keeps it alive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.protocol import SagaDefinition


class _Built(NamedTuple):
    definition: SagaDefinition
    hooks: SagaHooks | None


_graphs: WeakKeyDictionary[Any, _Built] = WeakKeyDictionary()


def remember_graph(graph: Any, definition: SagaDefinition, hooks: SagaHooks | None) -> None:
    """Record that ``graph`` (an uncompiled StateGraph) runs ``definition``, with ``hooks``."""
    _graphs[graph] = _Built(definition, hooks)


def _built(app: Any) -> _Built | None:
    builder = getattr(app, "builder", app)
    try:
        return _graphs.get(builder)
    except TypeError:  # neither hashable nor weakly referable: not a graph we built
        return None


def definition_of(app: Any) -> SagaDefinition | None:
    """The definition a compiled saga graph (or its uncompiled graph) runs; None when it was
    not built by sagagraph's builders."""
    built = _built(app)
    return built.definition if built is not None else None


def hooks_of(app: Any) -> SagaHooks | None:
    """The hooks a compiled saga graph was built with (its builder's ``hooks=``)."""
    built = _built(app)
    return built.hooks if built is not None else None


def check_new_input(app: Any, input: Mapping[str, Any]) -> None:
    """Run the ``check_input`` of the definition behind ``app`` on a new saga's ``input``;
    InputError (from the check) when the saga cannot use it."""
    definition = definition_of(app)
    if definition is not None and definition.check_input is not None:
        definition.check_input(input)
