"""A saga the work queue dead-lettered: the event that says so.

A queue worker that gives up on a saga (its message redelivered too often) records one event,
step ``worker`` and outcome ``dead_letter``; while it is the saga's last event, the saga needs
an operator, and the view's ``dead_letter`` key holds it (:func:`sagagraph.saga.view.dead_letter`).
A saga whose factory no worker of the queue runs is dead-lettered too, after a bounded number
of hand-backs, with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.constants import START
from langgraph.graph import StateGraph
from langgraph.types import Command

from sagagraph.graph.runner import saga_config
from sagagraph.graph.state import SagaState
from sagagraph.graph.stored import read_view
from sagagraph.saga.view import DEAD_LETTER as DEAD_LETTER
from sagagraph.saga.view import QUEUED, make_event

WORKER_STEP = "worker"
"""The ``step`` of events a queue worker records about a saga (not one of its steps)."""


def never_taken(view: Mapping[str, Any], deliveries: int) -> bool:
    """True when no worker has started the saga: it is still ``queued``, the ledger counts
    ``deliveries`` earlier deliveries (none), and it was never dead-lettered (a dead letter
    means workers took it, and ``requeue`` resets the count). Its first step never ran, so
    a cancel has nothing to compensate, not even that step's partial work."""
    if view.get("status") != QUEUED or deliveries:
        return False
    return not any(
        e.get("step") == WORKER_STEP and e.get("outcome") == DEAD_LETTER
        for e in view.get("events") or []
    )


def keep_next_step(app: Any, saga_id: str, update: Mapping[str, Any]) -> None:
    """Write ``update`` into the saga's state and keep its next steps as they were.

    A plain ``update_state`` counts as a superstep of the node that ran last: its routing
    (a ``Command(goto=...)`` the node returned) is not replayed, so the saga would be left
    with no next step, neither runnable nor compensable. The update is written as one of the
    pending nodes instead, with a ``goto`` to every pending node, so ``requeue``, ``resume``,
    ``cancel`` and ``rollback`` find the saga where it stopped.
    """
    config = saga_config(saga_id)
    pending = tuple(app.get_state(config).next)
    if not pending:
        app.update_state(config, dict(update))
        return
    app.update_state(config, Command(update=dict(update), goto=list(pending)), as_node=pending[0])


def dead_letter_unbuilt(checkpointer: Any, saga_id: str, detail: str) -> bool:
    """Dead-letter a saga whose graph this process cannot build (its factory is not among
    the worker's): the event is written through a stand-in graph of the saga's state with
    its pending nodes only, and the saga keeps those as its next steps, so ``requeue`` with
    the right ``--app`` runs it. False when the saga has no pending node to keep (it is not
    waiting on the queue)."""
    view = read_view(checkpointer, saga_id)
    pending = [n for n in (view or {}).get("next") or [] if n != START]
    if view is None or not pending:
        return False
    stand_in: StateGraph[SagaState, None, SagaState, Any] = StateGraph(SagaState)
    for name in pending:
        stand_in.add_node(name, _never_runs)
    stand_in.add_edge(START, pending[0])
    app = stand_in.compile(checkpointer=checkpointer)
    event = make_event(WORKER_STEP, "escalate", DEAD_LETTER, detail=detail)
    keep_next_step(app, saga_id, {"events": [event]})
    return True


def _never_runs(state: SagaState) -> dict[str, Any]:
    raise AssertionError("a stand-in node only carries a dead letter; it never runs")
