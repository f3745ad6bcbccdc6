"""The tool calls' event actions; the view's ``tools`` key is the kernel's
(:func:`sagagraph.saga.view.tools_by_step`), so ``status`` of a saga loads no LangChain."""

from __future__ import annotations

from sagagraph.saga.view import TOOL_CALL as TOOL_CALL
from sagagraph.saga.view import TOOL_UNDO as TOOL_UNDO
