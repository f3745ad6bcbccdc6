"""The hooks a graph's nodes tell, and how a run hands its own to them.

A node tells, in this order: OpenTelemetry's hooks (while an SDK tracer provider is
installed: nothing to tell otherwise), the graph's own (its builder's
``hooks=``), the run's (``config["configurable"]["sagagraph_hooks"]``, which the runners set
from their ``hooks=`` argument; LangGraph stores no object of ``configurable`` in a
checkpoint), and, when the run's config carries LangChain callbacks (LangSmith, a handler of
your own), LangChain custom events for them (:class:`LangChainEvents`).
"""

from __future__ import annotations

from typing import Any, Final

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import RunnableConfig

from sagagraph.saga.hooks import RouteDecision, SagaHooks, combine_hooks
from sagagraph.saga.tracing import OPEN_TELEMETRY, tracer
from sagagraph.saga.view import Event, FailureRecord

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
