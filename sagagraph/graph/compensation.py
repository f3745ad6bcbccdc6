"""The compensation part of the graph: undo committed steps in reverse order, one per superstep.

``compensate`` undoes one step and loops back to itself, so each compensation is checkpointed
on its own: after a crash the saga resumes at the next step still to undo, and the one that was
running when the process died runs again (compensations are idempotent). When a compensation
still fails after its retries, ``escalate`` alerts once (log, ``on_escalation`` hook, an
``escalate`` event), then pauses the saga with an interrupt until an operator answers
``retry`` or ``skip``; the saga never claims ``rolled_back`` while something was not undone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph
from langgraph.types import Command, interrupt

from sagagraph.agents.execution import compensate_step
from sagagraph.agents.protocol import SagaDefinition, StepResult
from sagagraph.agents.view import FailureRecord, committed_order, describe_error, make_event
from sagagraph.graph.context import context_for
from sagagraph.graph.state import SagaState

log = logging.getLogger("sagagraph")


def pending_compensations(state: SagaState, steps: Collection[str] | None = None) -> list[str]:
    """Steps still to compensate, in the order they must run.

    The step that failed comes first (it cleans up its own partial work, which may be
    nothing), then every committed step in reverse commit order. With ``steps`` (the defined
    step names), a failure recorded against something that is not a step (a router) adds
    nothing to undo.
    """
    done = set(state.get("compensated") or [])
    done |= {s["step"] for s in state.get("skipped") or []}
    pending: list[str] = []
    failure = state.get("failure")
    if failure and failure["step"] not in done and (steps is None or failure["step"] in steps):
        pending.append(failure["step"])
    results = state.get("results") or {}
    committed = committed_order(state.get("events") or [], results)
    pending += [s for s in reversed(committed) if s not in done and s not in pending]
    return pending


def make_compensate_node(
    definition: SagaDefinition,
) -> Callable[[SagaState, RunnableConfig], Command[Any]]:
    def compensate(state: SagaState, config: RunnableConfig) -> Command[Any]:
        saga_id = state["saga_id"]
        pending = pending_compensations(state, definition.step_names)
        if not pending:
            skipped = state.get("skipped") or []
            status = "resolved_by_operator" if skipped else "rolled_back"
            detail = f"{len(state.get('compensated') or [])} compensation(s) ran"
            if skipped:
                detail += f"; {len(skipped)} skipped by an operator"
            return Command(
                update={
                    "status": status,
                    "events": [make_event("saga", "finish", "ok", 1, detail)],
                },
                goto=END,
            )
        name = pending[0]
        step = definition.step(name)
        results = state.get("results") or {}
        result = StepResult.from_record(results[name]) if name in results else None
        ctx = context_for(definition, state, name, saga_id)
        outcome = compensate_step(step, ctx, result)
        if outcome.ok:
            return Command(
                update={
                    "status": "compensating",
                    "results": {name: None},
                    "compensated": [name],
                    "events": outcome.events,
                },
                goto="compensate",
            )
        assert outcome.error is not None
        failure: FailureRecord = {
            "step": name,
            "phase": "compensate",
            "error": describe_error(outcome.error),
            "attempts": outcome.attempts,
        }
        return Command(
            update={
                "status": "compensation_failed",
                "compensation_failure": failure,
                "events": outcome.events,
            },
            goto="escalate",
        )

    return compensate


ESCALATION = "escalate"
"""Event action recorded once when a compensation gives up and an operator is alerted."""


def _escalation_recorded(state: SagaState) -> bool:
    """True when this failure's alert already went out (the last event records it)."""
    events = state.get("events") or []
    return bool(events) and events[-1]["action"] == ESCALATION


def make_escalate_node(
    on_escalation: Callable[[dict[str, Any]], None] | None,
) -> Callable[[SagaState], Command[Any]]:
    """A node that alerts an operator once, then pauses the saga until they decide.

    It runs in two supersteps. The first logs, calls ``on_escalation`` and records an
    ``escalate`` event; the second interrupts. LangGraph runs an interrupted node again from
    its top when it resumes, so alerting in the same superstep as ``interrupt()`` would alert
    twice for one failure; this way the alert is checkpointed before the saga waits.
    """

    def escalate(state: SagaState) -> Command[Any]:
        failure = state.get("compensation_failure")
        assert failure is not None, "escalate runs only after a compensation gave up"
        payload = {"saga_id": state["saga_id"], **failure}
        if not _escalation_recorded(state):
            log.critical(
                "saga %s needs an operator: compensation of %s failed after %d attempt(s): %s",
                payload["saga_id"],
                failure["step"],
                failure["attempts"],
                failure["error"],
            )
            if on_escalation is not None:
                try:
                    on_escalation(payload)
                except Exception as error:  # an alert hook must not break the saga
                    log.error("alert hook failed: %s", describe_error(error))
            detail = (
                f"needs an operator: compensation failed after {failure['attempts']} "
                f"attempt(s): {failure['error']}"
            )
            return Command(
                update={"events": [make_event(failure["step"], ESCALATION, "waiting", 1, detail)]},
                goto="escalate",
            )
        decision = interrupt(payload)
        action = decision.get("action") if isinstance(decision, dict) else decision
        if action == "retry":
            return Command(
                update={
                    "status": "compensating",
                    "compensation_failure": None,
                    "events": [make_event(failure["step"], "resolve", "ok", 1, "operator: retry")],
                },
                goto="compensate",
            )
        if action == "skip":
            note = str(decision.get("note") or "") if isinstance(decision, dict) else ""
            record = (state.get("results") or {}).get(failure["step"])
            skipped = {
                "step": failure["step"],
                "note": note,
                "error": failure["error"],
                "left_behind": record["output"] if record else None,
            }
            return Command(
                update={
                    "status": "compensating",
                    "compensation_failure": None,
                    "results": {failure["step"]: None},
                    "skipped": [skipped],
                    "events": [
                        make_event(failure["step"], "resolve", "skipped", 1, f"operator: {note}")
                    ],
                },
                goto="compensate",
            )
        raise ValueError(f"resolve: expected action 'retry' or 'skip', got {action!r}")

    return escalate


def add_compensation_nodes(
    graph: StateGraph[SagaState, None, SagaState, SagaState],
    definition: SagaDefinition,
    *,
    on_escalation: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Add ``compensate`` and ``escalate`` to ``graph``."""
    # cast: LangGraph's node protocols do not match a total=False TypedDict state under mypy.
    graph.add_node(
        "compensate",
        cast(Any, make_compensate_node(definition)),
        destinations=("compensate", "escalate", END),
    )
    graph.add_node(
        "escalate",
        cast(Any, make_escalate_node(on_escalation)),
        destinations=("escalate", "compensate"),
    )
