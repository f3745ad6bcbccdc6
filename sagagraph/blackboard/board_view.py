"""The blackboard's part of a saga's view: the board, every version of every entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def board_view(values: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The view's ``board`` key, for a saga whose state has a board (a
    :data:`~sagagraph.saga.view.ViewSection`); nothing for any other saga."""
    return {"board": [dict(e) for e in values["board"]]} if "board" in values else {}
