"""Orchestration: a saga definition becomes a LangGraph state graph.

The builder and the runners are public from :mod:`sagagraph`; this package adds the answers to
tool calls waiting for an operator's approval (:mod:`sagagraph.graph.recover`). Each name is
imported on first use (PEP 562), as in :mod:`sagagraph`.
"""

from typing import TYPE_CHECKING

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.graph.recover import approve_tool_call, reject_tool_call

_EXPORTS = {"sagagraph.graph.recover": "approve_tool_call reject_tool_call"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = ["approve_tool_call", "reject_tool_call"]
