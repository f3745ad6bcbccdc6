"""A saga the work queue dead-lettered: the event that says so, and the view's ``dead_letter``.

A queue worker that gives up on a saga (its message redelivered too often) records one event,
step ``worker`` and outcome ``dead_letter``; while it is the saga's last event, the saga needs
an operator, and the view's ``dead_letter`` key holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sagagraph.saga.view import EventOutcome

WORKER_STEP = "worker"
"""The ``step`` of events a queue worker records about a saga (not one of its steps)."""
DEAD_LETTER: EventOutcome = "dead_letter"
"""The outcome of the event that records a saga dead-lettered by the work queue."""


def dead_letter(events: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The dead-letter event when it is the saga's last event: it needs an operator.

    Once anything runs again for the saga (an operator resumed it), later events follow and
    the saga is no longer dead-lettered.
    """
    if events and events[-1]["step"] == WORKER_STEP and events[-1]["outcome"] == DEAD_LETTER:
        return events[-1]
    return None


def dead_letter_view(
    values: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The view's ``dead_letter`` key (a :data:`~sagagraph.saga.view.ViewSection`)."""
    return {"dead_letter": dead_letter(events)}
