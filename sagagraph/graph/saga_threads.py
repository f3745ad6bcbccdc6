"""A saga is a LangGraph thread: list the sagas a checkpointer holds, force one toward rollback.

``list`` and ``recover`` start here: one saga is one LangGraph thread, so the saga ids are the
thread ids of the root namespace. SQLite and PostgreSQL answer with one ``SELECT DISTINCT``
on the saver's public connection (:func:`sagagraph.checkpoints.saga_index.thread_ids`); the
in-memory saver from its dict; any other saver by walking ``list(None)``, which reads every
checkpoint and is kept only as the fallback.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from sagagraph.errors import InputError, SagaNotFoundError
from sagagraph.graph.nodes import ROUTES_ITSELF
from sagagraph.graph.state import failed
from sagagraph.graph.state_view import pending_approvals
from sagagraph.redaction import redact
from sagagraph.saga.names import COMPENSATE, ESCALATE, SAGA, TERMINAL_STATUSES, validate_saga_id
from sagagraph.saga.protocol import RESERVED_NAMES
from sagagraph.saga.records import rollback_requested, saga_halted
from sagagraph.saga.view import Event, make_event
from sagagraph.storable_text import storable_text


def force_compensation(
    app: Any, saga_id: str, *, reason: str, by: str | None = None
) -> Event | None:
    """Turn an unfinished saga toward compensation; the next resume rolls it back.

    ``app`` is a compiled saga graph on the checkpointer that holds the saga. The step that
    was running when the process stopped (if any) is recorded as the failed step, so it is
    compensated first with ``result=None`` (it may have written part of its work), then the
    committed steps in reverse order. Nothing runs here: resume the saga to compensate. The
    event that records the request says why (``reason``) and who asked (``by``), when known.

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
    interrupted = [name for name in snap.next if name in step_nodes]
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
