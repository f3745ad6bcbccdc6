"""A saga's JSON view from its state values, without LangGraph: what ``status`` prints.

The runners build it from a snapshot or from the values a run streamed, the readers of a
stored checkpoint from its channel values (:mod:`sagagraph.graph.stored`), and the readers of
a finished saga from the fields stamped when it ended (:func:`view_of_finished`), so that
reading a finished saga loads no LangGraph. Tool calls waiting for an operator's approval are
LangGraph interrupts; they are read here by their attributes only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import WAITING_FOR_OPERATOR, saga_view

INTERRUPT = "__interrupt__"
"""LangGraph's channel of the interrupts a run paused on."""
TOOL_APPROVAL = "tool_approval"
"""The ``type`` of the interrupt value of a tool call waiting for approval (LangChain's
``ToolApprovalRequest``; see :mod:`sagagraph.tools.approval`)."""


_KEY = re.compile(r"\(call ([^\s:()]+):([^\s:()]+):call-\d+\)$")
"""The call's key at the end of a gated call's description (``... (call saga:step:call-3)``)."""


def approval(interrupt: Any, step: str | None = None) -> dict[str, Any] | None:
    """One entry of the view's ``approvals`` from a LangGraph ``Interrupt``; None when the
    interrupt is not a tool call waiting for approval.

    ``id`` is the interrupt's (``Command(resume={id: decision})`` answers it), ``call`` the
    model's tool-call id, ``key`` the call's idempotency key when the description names it,
    and ``step`` the node that paused (from the key when the snapshot's tasks are unknown:
    a graph other than the saga's reads it).
    """
    value = getattr(interrupt, "value", None)
    if not isinstance(value, Mapping) or value.get("type") != TOOL_APPROVAL:
        return None
    description = str(value.get("description", ""))
    found = _KEY.search(description)
    key = found.group(0)[6:-1] if found else None
    return {
        "id": interrupt.id,
        "step": step or (found.group(2) if found else None),
        "call": value.get("tool_call_id"),
        "key": key,
        "tool": value.get("name"),
        "args": dict(value.get("args") or {}),
        "description": description,
    }


def pending_approvals(tasks: Iterable[Any]) -> list[dict[str, Any]]:
    """The tool calls waiting for an operator, from a snapshot's tasks, in task order."""
    found = (approval(i, task.name) for task in tasks for i in task.interrupts)
    return [a for a in found if a is not None]


def approvals_in_writes(writes: Iterable[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    """The tool calls waiting for an operator, from a checkpoint's pending writes: for a
    reader whose graph is not the saga's (``sagagraph status`` of another definition's saga),
    whose snapshot has no tasks."""
    found = (
        approval(i)
        for _, channel, value in writes
        if channel == INTERRUPT and isinstance(value, (list, tuple))
        for i in value
    )
    return [a for a in found if a is not None]


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
    if (view["approvals"] or (waiting and view.get("forward_failure"))) and view[
        "status"
    ] == "running":
        view["status"] = WAITING_FOR_OPERATOR
    return view


def finished_view(values: Mapping[str, Any], saga_id: str) -> dict[str, Any]:
    """The view of a saga that ended (terminal status): nothing next, no operator awaited."""
    return state_view(values, saga_id, next=[], waiting=False)


def is_saga_state(values: Mapping[str, Any], saga_id: str) -> bool:
    """A saga's state carries its own id from its first step on. Before it (under LangGraph
    Server, which starts a saga from its input alone) it holds its input; killed while its
    input was being saved, only its channels' defaults. Another graph's thread shows the
    channels it shares with a saga graph (a ``status``, say), which no saga holds alone."""
    if "saga_id" in values:
        return bool(values["saga_id"] == saga_id)
    if "input" not in values and not _NOTHING_YET.issuperset(values):
        return False
    results = values.get("results") or {}
    events = values.get("events") or []
    return (
        isinstance(values.get("input", {}), Mapping)
        and isinstance(results, Mapping)
        and all(isinstance(r, Mapping) for r in results.values())
        and isinstance(events, list)
        and all(isinstance(e, Mapping) for e in events)
    )


_NOTHING_YET = frozenset(
    [
        "fail_at",
        "results",
        "completed",
        "cleanup",
        "outputs",
        "events",
        "compensated",
        "skipped",
        "usage",
    ]
)
"""The fields a saga graph's state shows before its input is saved: defaults only."""
