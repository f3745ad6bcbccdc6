"""Past the pivot: a saga that can only go forward.

Once a saga's pivot step (``Step(kind="pivot")``) commits, nothing before it is undone: the
saga's state says so (``pivot`` is stamped by its first node, ``past_pivot`` in the view is
the pivot among the committed steps), the pivot's commit is an event (``pivot``), rollback
and ``recover --compensate`` refuse to turn it back (:func:`past_pivot`).

The steps after the pivot are ``retriable``: each retries under its own ``Retry`` policy (with
its backoff), and when it still fails the saga does not compensate. It goes to
``retry_gate``, which alerts once (log, the hooks' ``on_escalation``, an ``escalate`` event)
in one superstep, then pauses the saga with ``interrupt()`` in the next, as ``escalate``
does for a compensation. ``resolve --retry`` runs the step again; ``resolve --skip --note``
records that an operator did its work by hand and carries the saga forward.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, interrupt

from sagagraph.graph.hooks import graph_hooks, node_hooks
from sagagraph.graph.locking import release_locks
from sagagraph.graph.nodes import DualNode
from sagagraph.graph.routing import after_step
from sagagraph.graph.state import SagaState, committed
from sagagraph.saga.drivers import Flow, Tell
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import ESCALATE, reserve_names
from sagagraph.saga.protocol import SagaDefinition
from sagagraph.saga.records import escalation_payload
from sagagraph.saga.view import Event, FailureRecord, make_event

log = logging.getLogger("sagagraph")

RETRY_GATE: Final = "retry_gate"
"""The node where a saga past its pivot waits for an operator after a retriable step gave up."""

reserve_names(RETRY_GATE)

PIVOT_ACTION: Final = "pivot"
"""Event action recorded when the pivot step commits: from then on the saga goes forward."""


def past_pivot(values: Mapping[str, Any]) -> bool:
    """True when the saga's pivot step has committed: it can no longer roll back."""
    pivot = values.get("pivot")
    return bool(pivot) and pivot in (values.get("completed") or [])


def pivot_event(step: str) -> Event:
    """The event of the pivot's commit."""
    return make_event(step, PIVOT_ACTION, "ok", 1, "past the pivot: the saga only goes forward")


def ended(command: Command[Any]) -> bool:
    """True when ``command`` ends the saga as completed (its locks are then released)."""
    update = command.update if isinstance(command.update, dict) else {}
    return update.get("status") == "completed"


def _gate_event(saga_id: str, failure: FailureRecord) -> Event:
    log.critical(
        "saga %s needs an operator: retriable step %s failed after %d attempt(s) past the "
        "pivot: %s",
        saga_id,
        failure["step"],
        failure["attempts"],
        failure["error"],
    )
    detail = (
        f"needs an operator: past the pivot, {failure['step']} failed after "
        f"{failure['attempts']} attempt(s): {failure['error']}"
    )
    return make_event(failure["step"], ESCALATE, "waiting", 1, detail)


def make_retry_gate(
    definition: SagaDefinition, hooks: SagaHooks | None = None
) -> DualNode[SagaState, Command[Any]]:
    """The ``retry_gate`` node (module docstring): alert once, then wait for an operator."""
    built = graph_hooks(hooks)

    def gate(state: SagaState, config: RunnableConfig) -> Flow[Command[Any]]:
        failure = state.get("forward_failure")
        assert failure is not None, "retry_gate runs only after a retriable step gave up"
        saga_id = state["saga_id"]
        events = state.get("events") or []
        if not (events and events[-1]["action"] == ESCALATE):
            told = node_hooks(config, built)
            yield Tell(told.on_escalation, told.aon_escalation, saga_id, failure)
            return Command(update={"events": [_gate_event(saga_id, failure)]}, goto=RETRY_GATE)
        decision = interrupt(escalation_payload(saga_id, failure))
        return _answered(definition, state, failure, decision)

    return DualNode(RETRY_GATE, gate)


def _answered(
    definition: SagaDefinition, state: SagaState, failure: FailureRecord, decision: object
) -> Command[Any]:
    """The Command of an operator's answer: run the step again, or take it as done."""
    action = decision.get("action") if isinstance(decision, dict) else decision
    note = str(decision.get("note") or "") if isinstance(decision, dict) else ""
    step = failure["step"]
    if action == "retry":
        detail = f"operator: retry: {note}" if note else "operator: retry"
        return Command(
            update={
                "forward_failure": None,
                "events": [make_event(step, "resolve", "ok", 1, detail)],
            },
            goto=step,
        )
    if action == "skip":
        event = make_event(step, "resolve", "skipped", 1, f"operator did it by hand: {note}")
        update: dict[str, Any] = {
            "forward_failure": None,
            "events": [event],
            **committed(step, {"data": {"done_by_operator": note}, "output": None}),
        }
        command, _ = after_step(definition, step, state, update, None)
        if ended(command):
            release_locks(state["saga_id"])
        return command
    raise ValueError(f"resolve: expected action 'retry' or 'skip', got {action!r}")
