"""One way to observe a saga: :class:`SagaHooks`, whose no-op methods a user overrides.

Every coordination style calls the same hooks at the same points: a run starts and ends, a
step's execute or compensate attempt starts and ends, a route is decided, a compensation
gives up (escalation), a tool call waits for approval, an operator acts, and each event is
recorded in the saga's state. OpenTelemetry's spans are such hooks
(:class:`~sagagraph.saga.tracing.OpenTelemetryHooks`, installed by default), and so are the
CLI's progress lines and alerts.

Each method has a sync form, which sync drivers call, and an async form (``aon_...``), which
async drivers (``arun_saga``, ``ainvoke``) await; an async form calls its sync form unless
overridden. A hook observes: it never changes the saga, and one that raises is logged and
ignored (:func:`combine_hooks` isolates every hook it combines, and the engine always calls
hooks through it).

Hooks reach a run through the runners' ``hooks=`` argument (a graph's nodes read them from
``config["configurable"]["sagagraph_hooks"]``, which LangGraph does not store), or reach every
run of a graph through its builder's ``hooks=``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec

from sagagraph.saga.view import Event, FailureRecord, describe_error

log = logging.getLogger("sagagraph")

P = ParamSpec("P")


@dataclass(frozen=True)
class RouteDecision:
    """One routing decision, as :meth:`SagaHooks.on_route` sees it."""

    router: str
    """``deterministic``, ``llm`` or ``blackboard``."""
    decided_by: str
    """The node that decided: a step, ``supervisor``, ``controller``."""
    goto: str
    """Where the saga goes: a step, ``finish``, ``compensate``, or branches joined by commas."""
    outcome: str = "ok"
    """How the decision went: its last ``route`` event's outcome (``ok``, ``rejected``,
    ``error``), ``ok`` when it recorded none."""
    events: tuple[Event, ...] = ()
    """The ``route`` events recorded with the decision (proposals, rules), in order."""
    started_ns: int | None = None
    """When the decision began (``time.time_ns()``), for a decision that took time."""


class SagaHooks:
    """Observe sagas: override the methods you need (each does nothing here)."""

    def on_run_start(self, saga_id: str, operation: str) -> None:
        """A run of the saga starts: ``run``, ``resume``, ``resolve``, ``rollback``,
        ``approve``, ``reject``, or a choreography step service's ``handle <event>``."""

    def on_run_end(self, saga_id: str, outcome: str) -> None:
        """The run ended: ``outcome`` is the saga's status as the run left it, ``paused``
        when it waits for an operator or stopped unfinished, ``error`` when the run raised."""

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        """An attempt of ``step``'s ``execute`` or ``compensate`` (``action``) starts. An
        attempt left by a kill or LangGraph's ``interrupt()`` has no end."""

    def on_step_end(self, saga_id: str, event: Event) -> None:
        """An attempt ended; ``event`` is its outcome (``ok``, ``retry``, ``error``,
        ``timeout``, ``halted``), as the audit trail records it."""

    def on_route(self, saga_id: str, decision: RouteDecision) -> None:
        """A route was decided (after a step, by the LLM router or the blackboard's
        controller)."""

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        """A compensation gave up after its retries: an operator must decide (``resolve``)."""

    def on_approval(self, saga_id: str, approval: Mapping[str, Any]) -> None:
        """A run paused on a tool call waiting for an operator's approval (an entry of the
        view's ``approvals``)."""

    def on_operator(self, saga_id: str, event: Event) -> None:
        """An operator acted: resolved a failed compensation (retry, skip), rolled the saga
        back or cancelled it, approved or rejected a tool call."""

    def on_event(self, saga_id: str, event: Event) -> None:
        """An event was recorded in the saga's state (tool calls included), in recorded
        order, once the superstep that recorded it is stored."""

    async def aon_run_start(self, saga_id: str, operation: str) -> None:
        self.on_run_start(saga_id, operation)

    async def aon_run_end(self, saga_id: str, outcome: str) -> None:
        self.on_run_end(saga_id, outcome)

    async def aon_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        self.on_step_start(saga_id, step, action, attempt)

    async def aon_step_end(self, saga_id: str, event: Event) -> None:
        self.on_step_end(saga_id, event)

    async def aon_route(self, saga_id: str, decision: RouteDecision) -> None:
        self.on_route(saga_id, decision)

    async def aon_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        self.on_escalation(saga_id, failure)

    async def aon_approval(self, saga_id: str, approval: Mapping[str, Any]) -> None:
        self.on_approval(saga_id, approval)

    async def aon_operator(self, saga_id: str, event: Event) -> None:
        self.on_operator(saga_id, event)

    async def aon_event(self, saga_id: str, event: Event) -> None:
        self.on_event(saga_id, event)


NO_HOOKS = SagaHooks()
"""Hooks that observe nothing."""


def _isolated(method: Callable[P, None], *args: P.args, **kwargs: P.kwargs) -> None:
    try:
        method(*args, **kwargs)
    except Exception as error:  # a hook observes: it never breaks the saga
        log.error("saga hook %s failed: %s", _name(method), describe_error(error))


async def _aisolated(
    method: Callable[P, Awaitable[None]], *args: P.args, **kwargs: P.kwargs
) -> None:
    try:
        await method(*args, **kwargs)
    except Exception as error:
        log.error("saga hook %s failed: %s", _name(method), describe_error(error))


def _name(method: Callable[..., object]) -> str:
    return str(getattr(method, "__qualname__", method))


class CombinedHooks(SagaHooks):
    """Several hooks called in order, each isolated: one that raises is logged, and the
    others and the saga carry on."""

    __slots__ = ("hooks",)

    def __init__(self, hooks: tuple[SagaHooks, ...]) -> None:
        self.hooks = hooks

    def on_run_start(self, saga_id: str, operation: str) -> None:
        for hook in self.hooks:
            _isolated(hook.on_run_start, saga_id, operation)

    def on_run_end(self, saga_id: str, outcome: str) -> None:
        for hook in reversed(self.hooks):  # nested like their starts
            _isolated(hook.on_run_end, saga_id, outcome)

    def on_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        for hook in self.hooks:
            _isolated(hook.on_step_start, saga_id, step, action, attempt)

    def on_step_end(self, saga_id: str, event: Event) -> None:
        for hook in reversed(self.hooks):
            _isolated(hook.on_step_end, saga_id, event)

    def on_route(self, saga_id: str, decision: RouteDecision) -> None:
        for hook in self.hooks:
            _isolated(hook.on_route, saga_id, decision)

    def on_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        for hook in self.hooks:
            _isolated(hook.on_escalation, saga_id, failure)

    def on_approval(self, saga_id: str, approval: Mapping[str, Any]) -> None:
        for hook in self.hooks:
            _isolated(hook.on_approval, saga_id, approval)

    def on_operator(self, saga_id: str, event: Event) -> None:
        for hook in self.hooks:
            _isolated(hook.on_operator, saga_id, event)

    def on_event(self, saga_id: str, event: Event) -> None:
        for hook in self.hooks:
            _isolated(hook.on_event, saga_id, event)

    async def aon_run_start(self, saga_id: str, operation: str) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_run_start, saga_id, operation)

    async def aon_run_end(self, saga_id: str, outcome: str) -> None:
        for hook in reversed(self.hooks):
            await _aisolated(hook.aon_run_end, saga_id, outcome)

    async def aon_step_start(self, saga_id: str, step: str, action: str, attempt: int) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_step_start, saga_id, step, action, attempt)

    async def aon_step_end(self, saga_id: str, event: Event) -> None:
        for hook in reversed(self.hooks):
            await _aisolated(hook.aon_step_end, saga_id, event)

    async def aon_route(self, saga_id: str, decision: RouteDecision) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_route, saga_id, decision)

    async def aon_escalation(self, saga_id: str, failure: FailureRecord) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_escalation, saga_id, failure)

    async def aon_approval(self, saga_id: str, approval: Mapping[str, Any]) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_approval, saga_id, approval)

    async def aon_operator(self, saga_id: str, event: Event) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_operator, saga_id, event)

    async def aon_event(self, saga_id: str, event: Event) -> None:
        for hook in self.hooks:
            await _aisolated(hook.aon_event, saga_id, event)


def combine_hooks(*hooks: SagaHooks | None) -> SagaHooks:
    """One hooks object calling each of ``hooks`` (None left out) in order, each isolated;
    :data:`NO_HOOKS` when none is left."""
    chosen: list[SagaHooks] = []
    for hook in hooks:
        if isinstance(hook, CombinedHooks):
            chosen += hook.hooks
        elif hook is not None and hook is not NO_HOOKS:
            chosen.append(hook)
    return CombinedHooks(tuple(chosen)) if chosen else NO_HOOKS
