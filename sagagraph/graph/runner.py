"""Run, resume, inspect and resolve sagas on a compiled saga graph.

Each saga is one LangGraph thread whose id is the saga id. Runs use ``durability="sync"``:
a step's completion is on disk before the next step starts, so a crash re-runs at most the
step that was running.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, Durability, StateSnapshot

from sagagraph.agents.ids import new_saga_id, validate_saga_id
from sagagraph.agents.protocol import RESERVED_NAMES
from sagagraph.agents.view import TERMINAL_STATUSES, describe_error, saga_view
from sagagraph.checkpoints import recovery
from sagagraph.errors import ConfigurationError, InputError, SagaNotFoundError

log = logging.getLogger("sagagraph")

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
    # The compensation that gave up (step, error, attempts) and what operators skipped;
    # setdefault, so a saga_view that learns these fields stays the authority.
    view.setdefault("compensation_failure", snap.values.get("compensation_failure"))
    view.setdefault("skipped", list(snap.values.get("skipped") or []))
    view["next"] = list(snap.next)
    view["waiting_for_operator"] = any(t.interrupts for t in snap.tasks)
    return view


def _check_fail_at(app: SagaApp, fail_at: str | None) -> None:
    """Refuse ``fail_at`` naming no step: an injection that never fires would hide a typo."""
    nodes = getattr(app, "nodes", None)
    if fail_at is None or nodes is None:
        return
    steps = [name for name in nodes if name not in RESERVED_NAMES]
    if fail_at not in steps:
        raise ConfigurationError(
            f"fail_at: unknown step {fail_at!r} (steps: {', '.join(steps) or 'none'})"
        )


def run_saga(
    app: SagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
) -> dict[str, Any]:
    """Start a new saga and run it until it ends or waits for an operator; return its view."""
    # An explicit empty id is refused, not silently replaced by a fresh one.
    saga_id = validate_saga_id(new_saga_id() if saga_id is None else saga_id)
    _check_fail_at(app, fail_at)
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
    """Every saga id (thread id) the checkpointer holds, each once, sorted."""
    yield from recovery.saga_ids(checkpointer)


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


def rollback_saga(
    app: SagaApp,
    saga_id: str,
    *,
    reason: str = "rollback requested by an operator",
    durability: Durability = DEFAULT_DURABILITY,
) -> dict[str, Any]:
    """Compensate an unfinished saga instead of finishing it; return its view.

    The step that was running when the process stopped is compensated first (with
    ``result=None``), then the committed steps in reverse order. A saga already compensating
    just continues. Finished sagas and sagas waiting for an operator raise InputError.
    """
    recovery.force_compensation(app, saga_id, reason=reason)
    app.invoke(None, saga_config(saga_id), durability=durability)
    return saga_status(app, saga_id)


def recover_sagas(
    app: SagaApp,
    *,
    compensate: bool = False,
    durability: Durability = DEFAULT_DURABILITY,
) -> list[dict[str, Any]]:
    """Resume every saga left ``running`` or ``compensating``; return their views.

    Forward by default; ``compensate=True`` rolls them back instead. A saga that cannot be
    recovered does not stop the others: its view carries ``recover_error`` (one line).
    """
    views = []
    for saga_id in unfinished_sagas(app):
        try:
            if compensate:
                view = rollback_saga(
                    app, saga_id, reason="recover --compensate", durability=durability
                )
            else:
                view = resume_saga(app, saga_id, durability=durability)
        except Exception as error:
            log.error("saga %s: recovery failed: %s", saga_id, describe_error(error))
            view = saga_status(app, saga_id)
            view["recover_error"] = describe_error(error)
        views.append(view)
    return views
