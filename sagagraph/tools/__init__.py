"""Agents that call tools, undone tool by tool.

Declare each tool's effect (:func:`compensable`, :func:`read_only`, :func:`irreversible`;
``approval=True`` puts an operator's decision before each call: :class:`ToolApprovalMiddleware`),
then either run a ``create_agent`` agent as a saga step (:func:`agent_step`), whose
compensation undoes its calls newest first across agents, or give a single agent the same
guarantee with :class:`ToolCompensationMiddleware`.

Each name is imported on first use (PEP 562), as in :mod:`sagagraph`: the tool calls' part of
the saga's view (:mod:`sagagraph.tools.calls`) loads without LangChain.
"""

from typing import TYPE_CHECKING

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.tools.agent_step import AgentParticipant, agent_step
    from sagagraph.tools.approval import ToolApprovalMiddleware
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

_EXPORTS = {
    "sagagraph.tools.agent_step": "AgentParticipant agent_step",
    "sagagraph.tools.approval": "ToolApprovalMiddleware",
    "sagagraph.tools.declare": (
        "ToolKind ToolPolicy compensable idempotency_key irreversible policy_of read_only"
    ),
    "sagagraph.tools.middleware": (
        "ToolCompensationMiddleware ToolFailure ToolLogState create_compensating_agent"
    ),
    "sagagraph.tools.records": "ToolCall merge_tool_calls",
    "sagagraph.tools.undo": "UndoReport undo_calls",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "AgentParticipant",
    "ToolApprovalMiddleware",
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
