"""The orchestration graph's own nodes, besides the kernel's ``compensate`` and ``escalate``.

Importing this module reserves their names (:func:`~sagagraph.saga.names.reserve_names`), so a
definition made afterwards refuses a step that takes one; the builder refuses it in any case.
"""

from __future__ import annotations

from typing import Final

from sagagraph.saga.names import reserve_names

SUPERVISOR: Final = "supervisor"
"""The LLM router's node: asks a chat model for the next step, behind the guard."""
COMPLETE: Final = "complete"
"""The node that joins parallel branches before a saga is completed."""

reserve_names(SUPERVISOR, COMPLETE)

ROUTES_ITSELF: Final = "sagagraph_routes_itself"
"""Node metadata of a step node that routes itself with ``Command(goto=...)`` (a chain's):
read back through ``get_graph()`` by whoever writes a state update as that node."""
