"""Answer tool calls waiting for an operator's approval: :func:`approve_tool_call`,
:func:`reject_tool_call`.

A gated tool call (see :mod:`sagagraph.tools.approval`) pauses its saga with LangGraph's
``interrupt()``; the view lists it under ``approvals``. These helpers read the pending calls,
build LangChain's decisions, and resume the saga with ``Command(resume={interrupt_id:
decision})`` under the saga's lease, like every runner. The same can be done by hand:
``app.invoke(Command(resume={approval["id"]: {"type": "approve"}}), saga_config(saga_id))``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.types import Command, Durability

from sagagraph.errors import InputError
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    SagaApp,
    answering,
    run_hooks,
    saga_status,
)
from sagagraph.saga.drivers import drive
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import SAGA
from sagagraph.saga.view import Event, make_event

Decision = dict[str, Any]
"""LangChain's decision for one call: ``{"type": "approve"}``, ``{"type": "edit",
"edited_action": {"name": ..., "args": {...}}}`` or ``{"type": "reject", "message": ...}``."""


def _waiting(view: Mapping[str, Any], call: str | None) -> list[dict[str, Any]]:
    """The approvals a decision answers: all of them, or the one ``call`` names (the model's
    tool-call id, its key, or the interrupt id); InputError when there is none."""
    saga_id = view["saga_id"]
    approvals = list(view.get("approvals") or [])
    if not approvals:
        raise InputError(
            f"saga {saga_id!r}: no tool call waits for approval (status {view['status']})"
        )
    if call is None:
        return approvals
    chosen = [a for a in approvals if call in (a["call"], a["id"], a.get("key"))]
    if not chosen:
        known = ", ".join(str(a["call"]) for a in approvals)
        raise InputError(
            f"saga {saga_id!r}: no tool call {call!r} waits for approval (waiting: {known})"
        )
    return chosen


def answer_tool_calls(
    app: SagaApp,
    saga_id: str,
    decide: Callable[[dict[str, Any]], Decision],
    *,
    call: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
) -> dict[str, Any]:
    """Resume the saga with ``decide(approval)``'s decision for each call it answers (every
    waiting call, or the one ``call`` names); return the saga's view once it ends or waits
    again. Calls left unanswered keep waiting. Each decision goes to the hooks'
    ``on_operator`` (the tool call's own event records its outcome in the saga)."""
    with saga_lease(app.checkpointer, saga_id):
        view = saga_status(app, saga_id)
        decisions = {a["id"]: (a, decide(a)) for a in _waiting(view, call)}
        told = run_hooks(app, hooks)
        for approval, decision in decisions.values():
            told.on_operator(saga_id, _decided(approval, decision))
        answer: Command[Any] = Command(resume={i: d for i, (_, d) in decisions.items()})
        kind = "reject" if any(d["type"] == "reject" for _, d in decisions.values()) else "approve"
        return drive(answering(app, saga_id, answer, durability, hooks, None, operation=kind))


def _decided(approval: Mapping[str, Any], decision: Decision) -> Event:
    """The operator's decision on one call, as the hooks are told of it."""
    outcome = "rejected" if decision["type"] == "reject" else "ok"
    detail = f"operator: {decision['type']} {approval['tool']} ({approval['call']})"
    if decision.get("message"):
        detail += f": {decision['message']}"
    return make_event(str(approval.get("step") or SAGA), "resolve", outcome, 1, detail)


def approve_tool_call(
    app: SagaApp,
    saga_id: str,
    *,
    call: str | None = None,
    edit: Mapping[str, Any] | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
) -> dict[str, Any]:
    """Approve the saga's waiting tool calls (or the one ``call`` names: its tool-call id).

    ``edit``: run the call with these arguments instead (merged over the model's); it needs
    exactly one call, so name it with ``call`` when several wait. InputError when no call
    waits, or ``call`` names none of them.
    """
    if edit is not None:
        view = saga_status(app, saga_id)
        if len(_waiting(view, call)) != 1:
            raise InputError(f"saga {saga_id!r}: --edit needs one call; name it with --call")

    def decide(approval: dict[str, Any]) -> Decision:
        if edit is None:
            return {"type": "approve"}
        args = {**approval["args"], **dict(edit)}
        return {"type": "edit", "edited_action": {"name": approval["tool"], "args": args}}

    return answer_tool_calls(app, saga_id, decide, call=call, durability=durability, hooks=hooks)


def reject_tool_call(
    app: SagaApp,
    saga_id: str,
    why: str,
    *,
    call: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
) -> dict[str, Any]:
    """Reject the saga's waiting tool calls (or the one ``call`` names), saying ``why``.

    The call does not run: its step fails with ToolRejectedError and the saga compensates
    what committed, newest first.
    """
    if not why.strip():
        raise InputError("reject: --why is required (who decided, and why)")

    def decide(approval: dict[str, Any]) -> Decision:
        return {"type": "reject", "message": why.strip()}

    return answer_tool_calls(app, saga_id, decide, call=call, durability=durability, hooks=hooks)
