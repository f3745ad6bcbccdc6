"""The JSON view of a saga's state values: what ``status`` prints and the runners return.

No LangGraph here: the runners build it from a snapshot or from the values a run streamed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import WAITING_FOR_OPERATOR, saga_view

TOOL_APPROVAL = "tool_approval"
"""The ``type`` of the interrupt value of a tool call waiting for approval (LangChain's
``ToolApprovalRequest``; see :mod:`sagagraph.tools.approval`)."""


def pending_approvals(tasks: Iterable[Any]) -> list[dict[str, Any]]:
    """The tool calls waiting for an operator, from a snapshot's tasks, in task order.

    Each: ``id`` (the interrupt's, which ``Command(resume={id: decision})`` answers),
    ``step``, ``call`` (the model's tool-call id), ``tool``, ``args`` and ``description``.
    """
    found: list[dict[str, Any]] = []
    for task in tasks:
        for pending in task.interrupts:
            value = pending.value
            if isinstance(value, Mapping) and value.get("type") == TOOL_APPROVAL:
                found.append(
                    {
                        "id": pending.id,
                        "step": task.name,
                        "call": value.get("tool_call_id"),
                        "tool": value.get("name"),
                        "args": dict(value.get("args") or {}),
                        "description": value.get("description", ""),
                    }
                )
    return found


def state_view(
    values: Mapping[str, Any],
    saga_id: str,
    *,
    next: list[str],
    waiting: bool,
    approvals: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON view of a saga's state values; ``next``, ``waiting`` and ``approvals`` come
    from its tasks. A saga whose tool calls wait for approval shows ``waiting_for_operator``
    as its status (its stored status stays ``running``)."""
    view = saga_view(values)
    # A saga killed right after its input checkpoint has no state yet: the id is the thread's.
    view["saga_id"] = view["saga_id"] or saga_id
    # The compensation that gave up (step, error, attempts) and what operators skipped;
    # setdefault, so a saga_view that learns these fields stays the authority.
    view.setdefault("compensation_failure", values.get("compensation_failure"))
    view.setdefault("skipped", list(values.get("skipped") or []))
    view["next"] = [] if view["status"] in TERMINAL_STATUSES else next
    view["waiting_for_operator"] = waiting
    view["approvals"] = list(approvals or [])
    if view["approvals"] and view["status"] == "running":
        view["status"] = WAITING_FOR_OPERATOR
    return view


def finished_view(values: Mapping[str, Any], saga_id: str) -> dict[str, Any]:
    """The view of a saga that ended (terminal status): nothing next, no operator awaited."""
    return state_view(values, saga_id, next=[], waiting=False)
