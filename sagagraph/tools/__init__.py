"""Agents that call tools, undone tool by tool.

Declare each tool's effect (:func:`compensable`, :func:`read_only`, :func:`irreversible`),
then either run a ``create_agent`` agent as a saga step (:func:`agent_step`), whose
compensation undoes its calls newest first across agents, or give a single agent the same
guarantee with :class:`ToolCompensationMiddleware`.
"""

from sagagraph.tools.agent_step import AgentParticipant, agent_step
from sagagraph.tools.declare import (
    ToolKind,
    ToolPolicy,
    compensable,
    idempotency_key,
    irreversible,
    policy_of,
    read_only,
)
from sagagraph.tools.middleware import (
    ToolCompensationMiddleware,
    ToolFailure,
    ToolLogState,
    create_compensating_agent,
)
from sagagraph.tools.records import ToolCall, merge_tool_calls
from sagagraph.tools.undo import UndoReport, undo_calls

__all__ = [
    "AgentParticipant",
    "ToolCall",
    "ToolCompensationMiddleware",
    "ToolFailure",
    "ToolKind",
    "ToolLogState",
    "ToolPolicy",
    "UndoReport",
    "agent_step",
    "compensable",
    "create_compensating_agent",
    "idempotency_key",
    "irreversible",
    "merge_tool_calls",
    "policy_of",
    "read_only",
    "undo_calls",
]
