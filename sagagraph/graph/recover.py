"""Recovery: find the sagas a stopped process left unfinished, resume them, or roll them back.

Each function holds the saga's lease while it drives the saga, as the runner does, so a saga
a live process is running is refused (SagaBusyError) or, by ``recover_sagas``, skipped.

Finding them reads no finished saga's state: the checkpointer's index
(:func:`sagagraph.checkpoints.saga_index.latest_checkpoints`) gives each saga's latest
checkpoint summary, and only a saga whose summary is not terminal, or that has none (stored
before the summary existed, or before its first step), is read in full. That hides no
unfinished saga: a checkpoint whose status is terminal is its saga's last one. The superstep
that sets ``completed``, ``rolled_back`` or ``resolved_by_operator`` ends the graph, so no task
runs after it and no pending writes hang on it (the writes-only window of
:mod:`sagagraph.graph.pending` is always on a non-terminal checkpoint); the input checkpoint
has no status at all, so it is read in full.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability

from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.errors import InputError, SagaBusyError
from sagagraph.graph import saga_threads
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.pending import START, needs_settling
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    SagaApp,
    resume_leased,
    run_hooks,
    saga_config,
    saga_status,
    streaming,
)
from sagagraph.saga.drivers import drive
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import QUEUED, describe_error

log = logging.getLogger("sagagraph")


def is_unfinished(view: Mapping[str, Any]) -> bool:
    """True when ``recover`` should resume this saga's view: its status is not final, it is
    not waiting for an operator, and it is not a queued saga a worker is still due to take.

    The status counts even when ``next`` is empty: a graph other than the one that ran the
    saga (the deterministic graph reading an LLM-routed saga, whose next node is
    ``supervisor``) sees nothing to run, and such a saga must still be found and resumed with
    its own graph.
    """
    if view["waiting_for_operator"]:
        return False
    # A queued saga waits for a queue worker, not for recovery; unless it was dead-lettered.
    if view["status"] == QUEUED and view.get("dead_letter") is None:
        return False
    return view["status"] not in TERMINAL_STATUSES


def open_sagas(app: SagaApp, *, mode: str | None = None) -> list[dict[str, Any]]:
    """Views of the sagas that may not have finished (optionally only those of ``mode``).

    Sagas whose latest checkpoint says they finished are skipped without reading their state
    (module docstring); the others are read in full, in saga id order.
    """
    views = []
    for summary in latest_checkpoints(app.checkpointer, skip=TERMINAL_STATUSES):
        try:
            view = saga_status(app, summary.saga_id)
        except InputError:
            continue  # not a saga (an invalid id), or no state at all
        if mode is None or view.get("mode") == mode:
            views.append((summary.saga_id, view))
    # Sorted here: a database's collation may order ids otherwise than Python does.
    return [view for _, view in sorted(views, key=lambda pair: pair[0])]


def unfinished_sagas(app: SagaApp, *, mode: str | None = None) -> list[str]:
    """Sagas left ``running`` or ``compensating``: what ``recover`` resumes.

    A saga that another process is running right now is listed too (it is unfinished);
    ``recover`` then finds its lease taken and leaves it alone.
    """
    return [v["saga_id"] for v in open_sagas(app, mode=mode) if is_unfinished(v)]


def waiting_sagas(app: SagaApp) -> list[dict[str, Any]]:
    """Views of the sagas waiting for an operator (``resolve`` answers them)."""
    return [v for v in open_sagas(app) if v["waiting_for_operator"]]


DEFAULT_ROLLBACK_REASON = "rollback requested by an operator"
"""The ``reason`` of a rollback asked for without one."""


def rollback_saga(
    app: SagaApp,
    saga_id: str,
    *,
    reason: str = DEFAULT_ROLLBACK_REASON,
    by: str | None = None,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Compensate one unfinished saga instead of finishing it; return its view.

    The step that was running when the process stopped is compensated first (with
    ``result=None``), then the committed steps in reverse order; no other saga is touched.
    The saga's events record the request, with ``reason`` (why) and ``by`` (who, in the
    event's ``by`` key and its detail). A saga already compensating just continues. Finished
    sagas and sagas waiting for an operator raise InputError, an unknown id
    SagaNotFoundError, and a saga a live process is running SagaBusyError. ``config``: as
    :func:`~sagagraph.graph.runner.run_saga`.
    """
    reason = reason.strip() or DEFAULT_ROLLBACK_REASON
    by = by.strip() if by is not None and by.strip() else None
    with saga_lease(app.checkpointer, saga_id):
        return rollback_leased(app, saga_id, reason, durability, hooks, by=by, config=config)


def rollback_leased(
    app: SagaApp,
    saga_id: str,
    reason: str,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
    *,
    by: str | None = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """:func:`rollback_saga` for a caller that already holds the saga's lease (a worker does).

    The event that records the request goes to the hooks' ``on_operator`` (it is recorded
    before the run that compensates, so ``on_event`` does not see it)."""
    _settle(app, saga_id)
    requested = saga_threads.force_compensation(app, saga_id, reason=reason, by=by)
    if requested is not None:
        run_hooks(app, hooks).on_operator(saga_id, requested)
    drive(streaming(app, None, saga_id, durability, hooks, config, operation="rollback"))
    return saga_status(app, saga_id)


def _settle(app: SagaApp, saga_id: str) -> None:
    """Give a saga stopped between a step's writes and its checkpoint (or before its first
    step) the checkpoint it missed, running no step: rollback then sees where it stands."""
    config = saga_config(saga_id)
    if needs_settling(app.get_state(config)):
        # Resuming applies the pending writes (the step does not run again) and stops before
        # whatever node comes next.
        after = [name for name in getattr(app, "nodes", {}) if name != START]
        app.invoke(None, config, durability=DEFAULT_DURABILITY, interrupt_before=after)


RECOVER_COMPENSATE_REASON = "recover --compensate"
"""The ``reason`` a saga rolled back by ``recover_sagas(compensate=True)`` records."""


def recover_saga(
    app: SagaApp,
    saga_id: str,
    *,
    compensate: bool = False,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
) -> dict[str, Any]:
    """Recover one saga left unfinished by a stopped process; return its view.

    Forward by default (the interrupted step runs again, then the rest); ``compensate=True``
    rolls it back instead. The saga is checked again once its lease is held, so a saga that
    another process finished in the meantime is only reported. SagaBusyError when a live
    process holds the saga.
    """
    with saga_lease(app.checkpointer, saga_id):
        # Writes stored and their checkpoint not written: LangGraph's snapshot shows them
        # applied (a final status, even), so the checkpoint is written first, running nothing.
        _settle(app, saga_id)
        view = saga_status(app, saga_id)
        if not is_unfinished(view):
            return view
        if compensate:
            # A saga already on its way back just carries on (force_compensation sees it).
            return rollback_leased(app, saga_id, RECOVER_COMPENSATE_REASON, durability, hooks)
        return resume_leased(app, saga_id, durability, hooks)


def recover_sagas(
    app: SagaApp,
    *,
    compensate: bool = False,
    durability: Durability = DEFAULT_DURABILITY,
    hooks: SagaHooks | None = None,
) -> list[dict[str, Any]]:
    """Recover every saga left ``running`` or ``compensating``; return their views.

    Forward by default; ``compensate=True`` rolls them back instead (a saga already
    compensating just finishes its rollback). A saga that a live process holds is skipped:
    its view carries ``recover_skipped`` (one line). A saga that cannot be recovered does not
    stop the others: its view carries ``recover_error`` (one line).
    """
    views = []
    for saga_id in unfinished_sagas(app):
        try:
            view = recover_saga(
                app, saga_id, compensate=compensate, durability=durability, hooks=hooks
            )
        except SagaBusyError as busy:
            log.info("saga %s: not recovered: %s", saga_id, busy)
            view = _view_or_stub(app, saga_id)
            view["recover_skipped"] = str(busy)
        except Exception as error:
            log.error("saga %s: recovery failed: %s", saga_id, describe_error(error))
            view = _view_or_stub(app, saga_id)
            view["recover_error"] = describe_error(error)
        views.append(view)
    return views


def _view_or_stub(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The saga's view, or the least one when even reading it fails: each saga gets a line."""
    try:
        return saga_status(app, saga_id)
    except Exception:
        return {"saga_id": saga_id, "status": "unknown", "completed": [], "compensated": []}
