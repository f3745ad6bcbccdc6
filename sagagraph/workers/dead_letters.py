"""A saga the work queue dead-lettered: the event that says so.

A queue worker that gives up on a saga (its message redelivered too often) records one event,
step ``worker`` and outcome ``dead_letter``; while it is the saga's last event, the saga needs
an operator, and the view's ``dead_letter`` key holds it (:func:`sagagraph.saga.view.dead_letter`).
"""

from __future__ import annotations

from sagagraph.saga.view import DEAD_LETTER as DEAD_LETTER

WORKER_STEP = "worker"
"""The ``step`` of events a queue worker records about a saga (not one of its steps)."""
