"""The compensation part of the graph: undo committed steps in reverse order, one per superstep.

``compensate`` undoes the next pending step and routes back to itself until none is pending:
the failed step's cleanup of its partial work first, then each committed step in reverse
commit order. Each compensation is checkpointed by LangGraph on its own, so a crash
mid-rollback resumes at the next step still to undo. The last compensation also records the
saga's final status, in the same superstep. Under ``ainvoke`` the node awaits a participant's
``acompensate`` (see :class:`~sagagraph.graph.nodes.DualNode`).

When a compensation still fails after its retries, ``escalate`` alerts once (log, the hooks'
``on_escalation``, an ``escalate`` event), then pauses the saga with an interrupt until an
operator answers ``retry`` or ``skip``; the saga never claims ``rolled_back`` while something
was not undone.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph
from langgraph.types import Command, interrupt

from sagagraph.graph.hooks import graph_hooks, node_hooks
from sagagraph.graph.locking import release_locks
from sagagraph.graph.nodes import DualNode, context_for
from sagagraph.graph.state import SagaState, undone
from sagagraph.saga.drivers import Flow, Tell
from sagagraph.saga.execution import StepAttempts, compensate_attempts
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import COMPENSATE, ESCALATE
from sagagraph.saga.protocol import SagaDefinition, Step, StepContext, StepResult
from sagagraph.saga.records import (
    ESCALATION,
    compensation_failed,
    escalation_event,
    escalation_payload,
    rollback_finished,
)
from sagagraph.saga.view import FailureRecord, make_event


def undo_plan(state: SagaState, steps: Collection[str]) -> list[str]:
    """Steps still to compensate, in the order they must run: the steps that failed first (each
    cleans up its own partial work, which may be nothing), then the committed steps newest
    first. Both are state (``cleanup`` and ``completed``); each compensation removes its step.

    ``steps`` are the defined step names: what is not one (a router that gave up, a blackboard
    refinement stopped by a rollback) has nothing of its own to undo. A saga stored before
    ``cleanup`` existed names its failed step in ``failure`` alone, which counts while that
    step is neither compensated nor skipped.
    """
    plan = [s for s in state.get("cleanup") or [] if s in steps]
    failure = state.get("failure")
    if failure and failure["step"] in steps and failure["step"] not in plan:
        skipped = [s["step"] for s in state.get("skipped") or []]
        if failure["step"] not in [*(state.get("compensated") or []), *skipped]:
            plan.append(failure["step"])
    return plan + [s for s in reversed(state.get("completed") or []) if s not in plan]


@dataclass(frozen=True)
class _Compensation:
    """The compensation a ``compensate`` superstep is about to run."""

    step: Step
    ctx: StepContext
    result: StepResult | None
    """The step's committed result; None when it failed or crashed before committing."""
    last: bool
    """True when nothing else is pending after this one: the saga finishes with it."""


def _finish(state: SagaState, update: dict[str, Any] | None = None) -> Command[Any]:
    """End the saga: ``rolled_back``, or ``resolved_by_operator`` when something was skipped.

    ``update`` (the last compensation's record) goes before the ``finish`` event.
    """
    update = dict(update or {})
    # The saga ends here: its semantic locks go before this superstep is checkpointed (a
    # crash in between runs this node again, which releases again).
    if state.get("saga_id"):
        release_locks(state["saga_id"])
    ran = len(state.get("compensated") or []) + len(update.get("compensated") or [])
    finished = rollback_finished(ran, len(state.get("skipped") or []))
    events = [*(update.get("events") or []), finished.event]
    return Command(update={**update, "status": finished.status, "events": events}, goto=END)


def _plan(definition: SagaDefinition, state: SagaState) -> _Compensation | Command[Any]:
    """The next compensation to run, or the finishing Command when nothing is pending."""
    pending = undo_plan(state, definition.step_names)
    if not pending:
        return _finish(state)
    name = pending[0]
    results = state.get("results") or {}
    return _Compensation(
        step=definition.step(name),
        ctx=context_for(definition, state, name, state["saga_id"]),
        result=StepResult.from_record(results[name]) if name in results else None,
        last=len(pending) == 1,
    )


def _apply(state: SagaState, planned: _Compensation, outcome: StepAttempts) -> Command[Any]:
    """The Command recording one compensation's outcome.

    A compensation that ends well removes its step's result and routes back to
    ``compensate`` for the next one; the last one finishes the saga in its own superstep
    (once it is checkpointed nothing is left that a resume could run). One that still fails
    after its retries pauses the saga for an operator.
    """
    name = planned.step.name
    if outcome.ok:
        update: dict[str, Any] = {**undone(name), "compensated": [name], "events": outcome.events}
        if planned.last:
            return _finish(state, update)
        return Command(update={"status": "compensating", **update}, goto=COMPENSATE)
    assert outcome.error is not None
    failure = compensation_failed(name, outcome.error, outcome.attempts)
    return Command(
        update={
            "status": "compensation_failed",
            "compensation_failure": failure,
            "events": outcome.events,
        },
        goto=ESCALATE,
    )


CompensateNode = DualNode[SagaState, Command[Any]]
"""The ``compensate`` node."""


def compensation_flow(
    definition: SagaDefinition, state: SagaState, hooks: SagaHooks
) -> Flow[Command[Any]]:
    """Run the next pending compensation (with its retries) and the Command that records it."""
    planned = _plan(definition, state)
    if isinstance(planned, Command):
        return planned
    outcome = yield from compensate_attempts(planned.step, planned.ctx, planned.result, hooks=hooks)
    return _apply(state, planned, outcome)


def make_compensate_node(
    definition: SagaDefinition, hooks: SagaHooks | None = None
) -> CompensateNode:
    """A node that runs the next pending compensation (with its retries) and records it.

    Each compensation is a superstep of its own, checkpointed by LangGraph: the node routes
    back to itself until nothing is pending, so a crash mid-rollback resumes after the last
    checkpointed compensation and runs again only the one that was running (compensations
    are idempotent). Under ``ainvoke`` it awaits the participant's ``acompensate`` when it
    has one, else runs ``compensate`` on the step pool (:mod:`sagagraph.saga.execution`).
    """
    built = graph_hooks(hooks)

    def compensate(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        return compensation_flow(definition, state, node_hooks(config, built))

    return CompensateNode(COMPENSATE, compensate)


def _escalation_recorded(state: SagaState) -> bool:
    """True when this failure's alert already went out (the last event records it)."""
    events = state.get("events") or []
    return bool(events) and events[-1]["action"] == ESCALATION


def make_escalate_node(hooks: SagaHooks | None = None) -> DualNode[SagaState, Command[Any]]:
    """A node that alerts an operator once, then pauses the saga until they decide.

    It runs in two supersteps. The first logs, tells the hooks (``on_escalation``) and records
    an ``escalate`` event; the second interrupts. LangGraph runs an interrupted node again from
    its top when it resumes, so alerting in the same superstep as ``interrupt()`` would alert
    twice for one failure; this way the alert is checkpointed before the saga waits.
    """
    built = graph_hooks(hooks)

    def escalate(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        failure = state.get("compensation_failure")
        assert failure is not None, "escalate runs only after a compensation gave up"
        saga_id = state["saga_id"]
        if not _escalation_recorded(state):
            alerted = escalation_event(saga_id, failure)
            told = node_hooks(config, built)
            yield Tell(told.on_escalation, told.aon_escalation, saga_id, failure)
            return Command(update={"events": [alerted]}, goto=ESCALATE)
        return _resolved(state, failure, interrupt(escalation_payload(saga_id, failure)))

    return DualNode(ESCALATE, escalate)


def _resolved(state: SagaState, failure: FailureRecord, decision: object) -> Command[Any]:
    """The Command of an operator's answer: retry the compensation, or skip it."""
    action = decision.get("action") if isinstance(decision, dict) else decision
    # The operator's note (who, and why), when given, stays in the audit trail.
    note = str(decision.get("note") or "") if isinstance(decision, dict) else ""
    if action == "retry":
        detail = f"operator: retry: {note}" if note else "operator: retry"
        return Command(
            update={
                "status": "compensating",
                "compensation_failure": None,
                "events": [make_event(failure["step"], "resolve", "ok", 1, detail)],
            },
            goto=COMPENSATE,
        )
    if action == "skip":
        record = (state.get("results") or {}).get(failure["step"])
        skipped = {
            "step": failure["step"],
            "note": note,
            "error": failure["error"],
            "left_behind": record["output"] if record else None,
        }
        event = make_event(failure["step"], "resolve", "skipped", 1, f"operator: {note}")
        return Command(
            update={
                "status": "compensating",
                "compensation_failure": None,
                **undone(failure["step"]),
                "skipped": [skipped],
                "events": [event],
            },
            goto=COMPENSATE,
        )
    raise ValueError(f"resolve: expected action 'retry' or 'skip', got {action!r}")


def add_compensation_nodes(
    graph: StateGraph[Any, None, Any, Any],
    definition: SagaDefinition,
    *,
    hooks: SagaHooks | None = None,
    compensate: DualNode[Any, Command[Any]] | None = None,
) -> None:
    """Add ``compensate`` and ``escalate`` to ``graph``.

    ``compensate`` stands in for the kernel's node (the blackboard's wraps it); by default
    :func:`make_compensate_node` for ``definition``. ``hooks``: the graph's own
    (:mod:`sagagraph.graph.hooks`).
    """
    node = compensate if compensate is not None else make_compensate_node(definition, hooks)
    # cast: LangGraph's node protocols do not match a total=False TypedDict state under mypy.
    graph.add_node(COMPENSATE, cast(Any, node), destinations=(COMPENSATE, ESCALATE, END))
    graph.add_node(
        ESCALATE, cast(Any, make_escalate_node(hooks)), destinations=(ESCALATE, COMPENSATE)
    )
