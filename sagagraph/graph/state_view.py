"""The JSON view of a saga's state values: what ``status`` prints and the runners return.

No LangGraph here: the runners build it from a snapshot or from the values a run streamed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sagagraph.saga.names import TERMINAL_STATUSES
from sagagraph.saga.view import saga_view


def state_view(
    values: Mapping[str, Any], saga_id: str, *, next: list[str], waiting: bool
) -> dict[str, Any]:
    """The JSON view of a saga's state values; ``next`` and ``waiting`` come from its tasks."""
    view = saga_view(values)
    # A saga killed right after its input checkpoint has no state yet: the id is the thread's.
    view["saga_id"] = view["saga_id"] or saga_id
    # The compensation that gave up (step, error, attempts) and what operators skipped;
    # setdefault, so a saga_view that learns these fields stays the authority.
    view.setdefault("compensation_failure", values.get("compensation_failure"))
    view.setdefault("skipped", list(values.get("skipped") or []))
    view["next"] = [] if view["status"] in TERMINAL_STATUSES else next
    view["waiting_for_operator"] = waiting
    return view


def finished_view(values: Mapping[str, Any], saga_id: str) -> dict[str, Any]:
    """The view of a saga that ended (terminal status): nothing next, no operator awaited."""
    return state_view(values, saga_id, next=[], waiting=False)
