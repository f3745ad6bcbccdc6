"""Taking up a saga that stopped short of its end: recover it, roll it back, or answer the tool
calls it waits on.

Each function holds the saga's lease while it drives the saga, as the runner does, so a saga
a live process is running is refused (SagaBusyError) or, by ``recover_sagas``, skipped.

Recovery finds the sagas a stopped process left unfinished and resumes them, or rolls them
back. Finding them reads no finished saga's state: the checkpointer's index
(:func:`sagagraph.checkpoints.saga_index.latest_checkpoints`) gives each saga's latest
checkpoint summary, and only a saga whose summary is not terminal, or that has none (stored
before the summary existed, or before its first step), is read in full. That hides no
unfinished saga: a checkpoint whose status is terminal is its saga's last one. The superstep
that sets ``completed``, ``rolled_back`` or ``resolved_by_operator`` ends the graph, so no task
runs after it and no pending writes hang on it (the writes-only window,
:func:`~sagagraph.graph.state.needs_settling`, is always on a non-terminal checkpoint); the
input checkpoint has no status at all, so it is read in full.

A rollback (:func:`rollback_saga`) turns an unfinished saga toward compensation
(:func:`force_compensation`: the step in flight is recorded as the failed step, or the saga
halts as a halting step would) and resumes it, so the compensations run as after a failure.

A gated tool call (see :mod:`sagagraph.tools.approval`) pauses its saga with LangGraph's
``interrupt()``; the view lists it under ``approvals``. :func:`approve_tool_call` and
:func:`reject_tool_call` read the pending calls, build LangChain's decisions, and resume the
saga with ``Command(resume={interrupt_id: decision})`` under the saga's lease, like every
runner. The same can be done by hand:
``app.invoke(Command(resume={approval["id"]: {"type": "approve"}}), saga_config(saga_id))``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Durability

from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.errors import InputError, SagaBusyError, SagaNotFoundError
from sagagraph.graph.leases import saga_lease
from sagagraph.graph.locking import held_locks, release_saga_locks
from sagagraph.graph.nodes import ROUTES_ITSELF
from sagagraph.graph.pivot import past_pivot
from sagagraph.graph.runner import (
    DEFAULT_DURABILITY,
    SagaApp,
    answering,
    resume_leased,
    run_hooks,
    saga_config,
    saga_status,
    streaming,
)
from sagagraph.graph.state import START, failed, needs_settling
from sagagraph.graph.views import pending_approvals
from sagagraph.redaction import redact
from sagagraph.saga.drivers import drive
from sagagraph.saga.hooks import SagaHooks
from sagagraph.saga.names import (
    COMPENSATE,
    DEFAULT_ROLLBACK_REASON,
    ESCALATE,
    SAGA,
    TERMINAL_STATUSES,
    validate_saga_id,
)
from sagagraph.saga.protocol import RESERVED_NAMES
from sagagraph.saga.records import rollback_requested, saga_halted
from sagagraph.saga.view import QUEUED, Event, describe_error, make_event
from sagagraph.storable_text import storable_text

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
    started: bool = True,
) -> dict[str, Any]:
    """:func:`rollback_saga` for a caller that already holds the saga's lease (a worker does).

    The event that records the request goes to the hooks' ``on_operator`` (it is recorded
    before the run that compensates, so ``on_event`` does not see it). ``started=False``: the
    caller knows that no process ever started the saga's next step (a queued saga no worker
    took), see :func:`force_compensation`."""
    _settle(app, saga_id)
    requested = force_compensation(app, saga_id, reason=reason, by=by, started=started)
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


def force_compensation(
    app: Any, saga_id: str, *, reason: str, by: str | None = None, started: bool = True
) -> Event | None:
    """Turn an unfinished saga toward compensation; the next resume rolls it back.

    ``app`` is a compiled saga graph on the checkpointer that holds the saga. The step that
    was running when the process stopped (if any) is recorded as the failed step, so it is
    compensated first with ``result=None`` (it may have written part of its work), then the
    committed steps in reverse order. Nothing runs here: resume the saga to compensate. The
    event that records the request says why (``reason``) and who asked (``by``), when known.
    ``started=False`` says that no process ever started the next step (a queued saga that no
    worker took): nothing of it can need undoing, so the saga halts with the request filed
    under the saga, and only its committed steps (none, for a queued saga) are compensated.

    Returns the event that records the request, None when the saga is already compensating
    (resuming carries on). Raises
    SagaNotFoundError for an unknown id, InputError for a finished saga or one waiting for an
    operator (resolve it instead).
    """
    config: RunnableConfig = {"configurable": {"thread_id": validate_saga_id(saga_id)}}
    snap = app.get_state(config)
    if not snap.values:
        raise SagaNotFoundError(f"saga {saga_id!r}: not found in this checkpointer")
    status = snap.values.get("status") or "running"
    if past_pivot(snap.values):
        raise InputError(
            f"saga {saga_id!r}: past its pivot {snap.values['pivot']!r}; it can only go "
            "forward (resume or resolve it)"
        )
    if pending_approvals(snap.tasks):
        raise InputError(
            f"saga {saga_id!r}: tool calls wait for approval; reject them (the saga then "
            "compensates), not rollback"
        )
    if any(task.interrupts for task in snap.tasks):
        raise InputError(f"saga {saga_id!r}: waiting for an operator; use resolve, not rollback")
    if status in TERMINAL_STATUSES or not snap.next:
        raise InputError(f"saga {saga_id!r}: already {status}; nothing to roll back")
    if status in ("compensating", "compensation_failed") or {COMPENSATE, ESCALATE} & set(snap.next):
        # Already on the way back (or about to ask an operator): resuming carries on.
        return None
    step_nodes = [name for name in app.nodes if name not in RESERVED_NAMES]
    interrupted = [name for name in snap.next if name in step_nodes] if started else []
    if interrupted:
        # The step in flight may have written part of its work: as the failed step, it is
        # compensated first, with result=None.
        stop = rollback_requested(interrupted[0], reason).update() | failed(interrupted[0])
        events = [_rollback_event(interrupted[0], reason, by)]
    else:
        # No step in flight (a router was deciding): stop the saga the way a halting step
        # does, so exactly the committed steps are compensated.
        stop = {"status": "compensating"} | saga_halted(reason).update()
        events = [_rollback_event(SAGA, reason, by)]
    update: dict[str, Any] = {**stop, "events": events}
    as_node = interrupted[0] if interrupted else step_nodes[0]
    # Writing "as" a step node runs that node's routing edge, which sends a failed or halted
    # saga to compensate. A chain's step node has no edge (it routes itself with a Command,
    # see graph.builder): it is given the Command it would have returned.
    drawn = app.get_graph().nodes.get(as_node)
    routes_itself = bool(drawn is not None and (drawn.metadata or {}).get(ROUTES_ITSELF))
    values: Any = Command(update=update, goto=COMPENSATE) if routes_itself else update
    app.update_state(config, values, as_node=as_node)
    return events[0]


def _rollback_event(step: str, reason: str, by: str | None) -> Event:
    if by is None:
        return make_event(step, "resolve", "rollback", 1, reason)
    event = make_event(step, "resolve", "rollback", 1, f"{by}: {reason}")
    event["by"] = storable_text(redact(by))
    return event


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
        if compensate and not view.get("past_pivot"):
            # A saga already on its way back just carries on (force_compensation sees it);
            # one past its pivot can only go forward.
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
    release_ended_locks(app)
    return views


def release_ended_locks(app: SagaApp) -> list[str]:
    """Release the semantic locks of sagas that have ended (or that the store does not hold);
    the sagas released. A saga releases its locks as it ends; this sweeps what a store
    restored from a backup, or a saga deleted by hand, left behind."""
    released = []
    for saga_id in sorted({lock["saga_id"] for lock in held_locks(app.checkpointer)}):
        try:
            ended = saga_status(app, saga_id)["status"] in TERMINAL_STATUSES
        except SagaNotFoundError:
            ended = True
        except InputError:
            continue
        if ended:
            release_saga_locks(app.checkpointer, saga_id)
            released.append(saga_id)
    return released


def _view_or_stub(app: SagaApp, saga_id: str) -> dict[str, Any]:
    """The saga's view, or the least one when even reading it fails: each saga gets a line."""
    try:
        return saga_status(app, saga_id)
    except Exception:
        return {"saga_id": saga_id, "status": "unknown", "completed": [], "compensated": []}


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
