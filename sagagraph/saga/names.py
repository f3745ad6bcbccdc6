"""The names every part of sagagraph shares: graph nodes, coordination modes, statuses.

Defined once here so that orchestration, choreography, the blackboard, recovery, the CLI and
the pictures cannot drift apart (LangGraph's ``constants.py`` does the same for START and END).
"""

from __future__ import annotations

from typing import Final

COMPENSATE: Final = "compensate"
"""The node that undoes the next committed step, newest first, one superstep each."""
ESCALATE: Final = "escalate"
"""The node that alerts an operator and waits (``interrupt()``) when a compensation gives up."""
SUPERVISOR: Final = "supervisor"
"""The LLM router's node: asks a chat model for the next step, behind the guard."""
COMPLETE: Final = "complete"
"""The node that joins parallel branches before a saga is completed."""
CONTROLLER: Final = "controller"
"""The blackboard's node that reads the board and picks the next knowledge source."""
RESERVED_NODES: Final = frozenset(
    {COMPENSATE, ESCALATE, SUPERVISOR, COMPLETE, CONTROLLER, "__start__", "__end__"}
)
"""Node names a step may not take."""

ORCHESTRATION: Final = "orchestration"
CHOREOGRAPHY: Final = "choreography"
BLACKBOARD: Final = "blackboard"
MODES: Final = (ORCHESTRATION, CHOREOGRAPHY, BLACKBOARD)
"""The coordination styles, as the JSON view's ``mode`` and ``--mode`` spell them."""

TERMINAL_STATUSES: Final = frozenset({"completed", "rolled_back", "resolved_by_operator"})
"""Statuses after which nothing more happens to a saga."""

SAGA: Final = "saga"
"""The ``step`` of events and records that concern the whole saga, not one of its steps."""
