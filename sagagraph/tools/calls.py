"""The tool calls' part of a saga's view: each agent step's calls and where each stands.

Tool calls and their undos are events of the step that made them (actions ``tool_call`` and
``tool_undo``, each with the tool and the call's idempotency key); :func:`tools_by_step` reads
them back into the view's ``tools`` key. Nothing here needs LangChain, so ``status`` of a saga
loads it cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TOOL_CALL = "tool_call"
"""Event action of a tool call an agent step made (outcome ``ok`` or ``error``)."""
TOOL_UNDO = "tool_undo"
"""Event action of the undo of one tool call (``ok``, ``retry``, ``error``, ``irreversible``)."""


def tools_by_step(events: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each agent step's tool calls, in call order, with where each stands now.

    ``status`` is ``forward`` (the call took effect), ``failed`` (the tool reported an error),
    ``undone`` (its undo ran), or ``not_undone`` (its undo gave up or the tool is
    irreversible). A call whose result was lost in a crash shows up once its undo ran.
    """
    steps: dict[str, dict[str, dict[str, Any]]] = {}
    for event in events:
        key = event.get("key")
        if event["action"] not in (TOOL_CALL, TOOL_UNDO) or not key:
            continue
        calls = steps.setdefault(event["step"], {})
        call = calls.setdefault(key, {"tool": event.get("tool"), "key": key, "status": "forward"})
        if event["action"] == TOOL_CALL:
            call["status"] = "forward" if event["outcome"] == "ok" else "failed"
        elif event["outcome"] == "ok":
            call["status"] = "undone"
        elif event["outcome"] in ("error", "irreversible"):
            call["status"] = "not_undone"
    return {step: list(calls.values()) for step, calls in steps.items()}


def tool_calls_view(
    values: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The view's ``tools`` key (a :data:`~sagagraph.saga.view.ViewSection`)."""
    return {"tools": tools_by_step(events)}
