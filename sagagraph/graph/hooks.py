"""The hooks of a saga graph, and what its builder remembers of it.

What each graph was built for. ``build_saga_graph`` (and the blackboard's builder) remember
the definition and the hooks of each graph they build (:func:`remember_graph`); a graph
compiled from it keeps that graph as its public ``builder``. ``run_saga`` and ``arun_saga``
find the definition there and call its ``check_input`` before anything is written
(:func:`check_new_input`); every runner tells the graph's hooks what it observes besides its
nodes (:func:`hooks_of`). Nothing is put in the graph itself: a node's metadata would travel
into every run's config and traces. A weak mapping: remembering a graph never keeps it alive.

The hooks a node tells, in this order: OpenTelemetry's hooks (while an SDK tracer provider is
installed: nothing to tell otherwise), the graph's own (its builder's ``hooks=``), the run's
(``config["configurable"]["sagagraph_hooks"]``, which the runners set from their ``hooks=``
argument; LangGraph stores no object of ``configurable`` in a checkpoint), and, when the
run's config carries LangChain callbacks (LangSmith, a handler of your own), LangChain custom
events for them (:class:`LangChainEvents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple
from weakref import WeakKeyDictionary

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import RunnableConfig

from sagagraph.saga.hooks import RouteDecision, SagaHooks, combine_hooks
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.tracing import OPEN_TELEMETRY, tracer
from sagagraph.saga.view import Event, FailureRecord


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


def has_input_check(app: Any) -> bool:
    """True when the definition behind ``app`` has a ``check_input`` to run on new input."""
    definition = definition_of(app)
    return definition is not None and definition.check_input is not None


def check_new_input(app: Any, input: Mapping[str, Any]) -> None:
    """Run the ``check_input`` of the definition behind ``app`` on a new saga's ``input``;
    InputError (from the check) when the saga cannot use it."""
    definition = definition_of(app)
    if definition is not None and definition.check_input is not None:
        definition.check_input(input)


HOOKS_KEY: Final = "sagagraph_hooks"
"""The ``configurable`` key of a run's hooks."""

STEP_START: Final = "sagagraph.step_start"
"""LangChain custom event: an attempt of a step's execute or compensate starts."""
STEP_END: Final = "sagagraph.step_end"
"""LangChain custom event: the attempt ended (data: its event)."""
ROUTE: Final = "sagagraph.route"
"""LangChain custom event: a route was decided."""
ESCALATION: Final = "sagagraph.escalation"
"""LangChain custom event: a compensation gave up; an operator must decide."""


class LangChainEvents(SagaHooks):
    """What a node observes, as LangChain custom events to the callbacks of its config."""

    __slots__ = ("config",)

    def __init__(self, config: RunnableConfig) -> None:
        self.config = config

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        data = {"saga_id": saga_id, "step": step, "action": action, "attempt": attempt}
        dispatch_custom_event(STEP_START, data, config=self.config)

    def on_step_end(self, saga_id: str, event: Event) -> None:
        dispatch_custom_event(STEP_END, {"saga_id": saga_id, **event}, config=self.config)

    def on_route(self, saga_id: str, decision: RouteDecision) -> None:
        dispatch_custom_event(ROUTE, _route(saga_id, decision), config=self.config)

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        dispatch_custom_event(ESCALATION, {"saga_id": saga_id, **failure}, config=self.config)

    async def aon_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        data = {"saga_id": saga_id, "step": step, "action": action, "attempt": attempt}
        await adispatch_custom_event(STEP_START, data, config=self.config)

    async def aon_step_end(self, saga_id: str, event: Event) -> None:
        await adispatch_custom_event(STEP_END, {"saga_id": saga_id, **event}, config=self.config)

    async def aon_route(self, saga_id: str, decision: RouteDecision) -> None:
        await adispatch_custom_event(ROUTE, _route(saga_id, decision), config=self.config)

    async def aon_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        data = {"saga_id": saga_id, **failure}
        await adispatch_custom_event(ESCALATION, data, config=self.config)


def _route(saga_id: str, decision: RouteDecision) -> dict[str, Any]:
    return {
        "saga_id": saga_id,
        "router": decision.router,
        "decided_by": decision.decided_by,
        "goto": decision.goto,
        "outcome": decision.outcome,
    }


def _has_callbacks(config: RunnableConfig) -> bool:
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        return bool(callbacks.handlers)
    return bool(callbacks)


def graph_hooks(hooks: SagaHooks | None) -> SagaHooks:
    """The hooks every run of a graph tells besides OpenTelemetry's: its builder's, isolated."""
    return combine_hooks(hooks)


def node_hooks(config: RunnableConfig, built: SagaHooks) -> SagaHooks:
    """The hooks a node tells in this run: OpenTelemetry's (while a tracer provider is
    installed), ``built`` (:func:`graph_hooks`), the run's, and LangChain custom events when
    the config carries callbacks."""
    run = (config.get("configurable") or {}).get(HOOKS_KEY)
    events = LangChainEvents(config) if _has_callbacks(config) else None
    traced = OPEN_TELEMETRY if tracer() is not None else None
    if run is None and events is None and traced is None:
        return built
    return combine_hooks(traced, built, run if isinstance(run, SagaHooks) else None, events)
