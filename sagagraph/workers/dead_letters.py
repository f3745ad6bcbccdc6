"""A saga the work queue dead-lettered: the event that says so.

A queue worker that gives up on a saga (its message redelivered too often) records one event,
step ``worker`` and outcome ``dead_letter``; while it is the saga's last event, the saga needs
an operator, and the view's ``dead_letter`` key holds it (:func:`sagagraph.saga.view.dead_letter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Command

from sagagraph.graph.runner import saga_config
from sagagraph.saga.view import DEAD_LETTER as DEAD_LETTER

WORKER_STEP = "worker"
"""The ``step`` of events a queue worker records about a saga (not one of its steps)."""


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
