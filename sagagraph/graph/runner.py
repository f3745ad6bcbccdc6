"""Run, resume, inspect and resolve sagas on a compiled saga graph.

Each saga is one LangGraph thread whose id is the saga id. Runs use ``durability="sync"``:
a step's completion is on disk before the next step starts, so a crash re-runs at most the
step that was running.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, Durability, StateSnapshot

from sagagraph.agents.ids import new_saga_id, validate_saga_id
from sagagraph.agents.view import TERMINAL_STATUSES, saga_view
from sagagraph.errors import ConfigurationError, InputError, SagaNotFoundError

DEFAULT_DURABILITY: Durability = "sync"
RECURSION_LIMIT = 1_000
"""Supersteps one invocation may take; a saga of n steps needs about 2n + 2."""


class SagaApp(Protocol):
    """The part of a compiled LangGraph graph the runner uses."""

    checkpointer: Any

    def invoke(self, input: Any, config: RunnableConfig | None = ..., **kwargs: Any) -> Any: ...

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = ...) -> StateSnapshot: ...


def saga_config(saga_id: str) -> RunnableConfig:
    """The LangGraph config of one saga: its thread, and room for long sagas."""
    return {"configurable": {"thread_id": saga_id}, "recursion_limit": RECURSION_LIMIT}


def initial_state(
    saga_id: str, input: Mapping[str, Any], *, fail_at: str | None = None
) -> dict[str, Any]:
    return {"saga_id": saga_id, "input": dict(input), "fail_at": fail_at}


def _snapshot(app: SagaApp, saga_id: str) -> StateSnapshot:
    return app.get_state(saga_config(validate_saga_id(saga_id)))


def saga_status(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The JSON view of one saga; SagaNotFoundError when no checkpoint has it."""
    snap = _snapshot(app, saga_id)
    if not snap.values:
        raise SagaNotFoundError(f"saga {saga_id!r}: not found in this checkpointer")
    view = saga_view(snap.values)
    view["next"] = list(snap.next)
    view["waiting_for_operator"] = any(t.interrupts for t in snap.tasks)
    return view


def run_saga(
    app: SagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
) -> dict[str, Any]:
    """Start a new saga and run it until it ends or waits for an operator; return its view."""
    saga_id = validate_saga_id(saga_id or new_saga_id())
    if _snapshot(app, saga_id).values:
        raise InputError(f"saga {saga_id!r}: already exists; use resume, or pick another id")
    app.invoke(
        initial_state(saga_id, input, fail_at=fail_at),
        saga_config(saga_id),
        durability=durability,
    )
    return saga_status(app, saga_id)


def resume_saga(
    app: SagaApp,
    saga_id: str,
    *,
    durability: Durability = DEFAULT_DURABILITY,
) -> dict[str, Any]:
    """Continue an unfinished saga from its last checkpoint; steps that committed do not re-run.

    A saga waiting for an operator is left as it is: use :func:`resolve_saga`.
    """
    view = saga_status(app, saga_id)
    if view["waiting_for_operator"] or not view["next"]:
        return view
    app.invoke(None, saga_config(saga_id), durability=durability)
    return saga_status(app, saga_id)


def resolve_saga(
    app: SagaApp,
    saga_id: str,
    action: Literal["retry", "skip"],
    *,
    note: str = "",
    durability: Durability = DEFAULT_DURABILITY,
) -> dict[str, Any]:
    """Answer a saga waiting for an operator: ``retry`` the failed compensation, or ``skip`` it.

    ``skip`` records that an operator took responsibility (with ``note``) and lists what could
    not be undone; the saga then ends ``resolved_by_operator``.
    """
    view = saga_status(app, saga_id)
    if not view["waiting_for_operator"]:
        raise InputError(f"saga {saga_id!r}: not waiting for an operator (status {view['status']})")
    if action not in ("retry", "skip"):
        raise ConfigurationError(f"resolve: action must be 'retry' or 'skip', got {action!r}")
    if action == "skip" and not note.strip():
        raise InputError("resolve --skip: --note is required (who decided, and why)")
    app.invoke(
        Command(resume={"action": action, "note": note}),
        saga_config(saga_id),
        durability=durability,
    )
    return saga_status(app, saga_id)


def saga_ids(checkpointer: BaseCheckpointSaver[Any]) -> Iterator[str]:
    """Every saga id (thread id) the checkpointer holds, each once."""
    seen: set[str] = set()
    for item in checkpointer.list(None):
        thread_id = str(item.config["configurable"]["thread_id"])
        if item.config["configurable"].get("checkpoint_ns"):
            continue
        if thread_id not in seen:
            seen.add(thread_id)
            yield thread_id


def list_sagas(app: SagaApp, *, status: str | None = None) -> list[dict[str, Any]]:
    """Views of every saga in the app's checkpointer, optionally only those with ``status``."""
    views = []
    for saga_id in saga_ids(app.checkpointer):
        try:
            view = saga_status(app, saga_id)
        except InputError:
            continue
        if status is None or view["status"] == status:
            views.append(view)
    return views


def unfinished_sagas(app: SagaApp) -> list[str]:
    """Sagas left ``running`` or ``compensating``: what ``recover`` resumes."""
    return [
        v["saga_id"]
        for v in list_sagas(app)
        if v["status"] not in TERMINAL_STATUSES and not v["waiting_for_operator"] and v["next"]
    ]
