"""A human gate before costly or irreversible tool calls: :class:`ToolApprovalMiddleware`.

A tool declared with ``approval=True`` does not run until an operator decides (docs/tools.md,
section 4). The gate is LangChain's ``HumanInTheLoopMiddleware`` in its ``per_call`` mode: each
gated call pauses the agent with LangGraph's ``interrupt()``, keyed by its interrupt id, and
the pause is a checkpoint any process can resume with ``Command(resume={interrupt_id:
decision})``. The decisions are LangChain's (approve, edit, reject); a rejection fails the run
with :class:`~sagagraph.errors.ToolRejectedError` instead of going back to the model.

In a saga, an approved (or edited) call is marked approved in the saga store before it runs
(:meth:`~sagagraph.saga.locks.SagaLocks.note_approved`): a process can die after the tool ran
and before its result was checkpointed, and the mark tells such a call (outcome unknown: a
rejection undoes it, or reports it to an operator when it is irreversible) from one never
approved (it never ran: nothing to undo).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from langchain.agents.middleware import AgentState, HumanInTheLoopMiddleware, InterruptOnConfig
from langchain.agents.middleware.human_in_the_loop import DecisionType
from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from sagagraph.errors import ConfigurationError, ToolRejectedError
from sagagraph.tools.declare import current_saga_locks, note_executed_args, require_policy
from sagagraph.tools.records import call_key, call_number, call_offset, content_text, scope_of

DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject")
"""What an operator may answer a gated call with."""

T = TypeVar("T")


def gated_tools(tools: Sequence[BaseTool]) -> list[str]:
    """Names of the tools declared with ``approval=True``, in order."""
    return [t.name for t in tools if require_policy(t).approval]


class ToolApprovalMiddleware(HumanInTheLoopMiddleware[Any, Any, Any]):
    """Pause before each call of a tool declared ``approval=True``; a rejection fails the run.

    Built on LangChain's ``HumanInTheLoopMiddleware`` (``interrupt_mode="per_call"``, decisions
    approve, edit and reject). Place it after :class:`ToolCompensationMiddleware` in the
    ``middleware`` list, so the call is keyed and logged with the arguments it runs with;
    :func:`~sagagraph.tools.agent_step` and :func:`~sagagraph.tools.create_compensating_agent`
    add it themselves when a tool needs approval.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool],
        *,
        label: str = "agent",
        description: str = "waiting for an operator's approval",
    ) -> None:
        names = gated_tools(tools)
        if not names:
            raise ConfigurationError(
                "ToolApprovalMiddleware: no tool is declared with approval=True"
            )
        self.label = label
        """The agent's label in its calls' keys (the saga step's name)."""
        self.description = description
        config: InterruptOnConfig = {
            "allowed_decisions": list(DECISIONS),
            "description": self._describe,
        }
        super().__init__(
            {name: config for name in names},
            description_prefix=description,
            interrupt_mode="per_call",
        )

    def _describe(self, tool_call: ToolCall, state: AgentState[Any], runtime: Runtime[Any]) -> str:
        """``<tool> <args as JSON> (call <key>)``: what the operator is asked about, with the
        call's idempotency key, which names the saga and the step even to a reader that does
        not have the saga's graph (:func:`sagagraph.graph.views.approval` reads it)."""
        key = self._key(tool_call, state)
        args = json.dumps(tool_call.get("args") or {}, sort_keys=True, default=str)
        return f"{self.description}: {tool_call['name']} {args} (call {key})"

    def _key(self, tool_call: ToolCall, state: Any) -> str:
        """The call's idempotency key (the one its log record and its undo see)."""
        messages = list(state.get("messages") or [])
        n = call_number(messages, tool_call.get("id"), call_offset(state))
        return call_key(scope_of(self.label), n)

    def _require_checkpointer(self, request: ToolCallRequest) -> None:
        """ConfigurationError when a gated call runs where no checkpointer keeps the pause:
        the run would return paused, and nothing could ever resume it.

        A run without a thread has no checkpointer (LangGraph requires a ``thread_id`` of every
        checkpointed run), so the thread id tells, with public API only."""
        name = request.tool_call.get("name")
        if name not in self.interrupt_on:
            return
        configurable = get_config().get("configurable") or {}
        if configurable.get("thread_id") is None:
            raise ConfigurationError(
                f"tool {name!r} needs an operator's approval, and the pause is a checkpoint: "
                "run the agent with a checkpointer (an orchestrated saga, or "
                "create_compensating_agent(..., checkpointer=...)); choreographed sagas "
                "cannot wait for approval"
            )

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        ran: list[ToolCallRequest] = []
        run = self._running(request, handler, ran)
        return _refused_or(request, ran, super().wrap_tool_call(request, run))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        ran: list[ToolCallRequest] = []
        run = self._running(request, handler, ran)
        return _refused_or(request, ran, await super().awrap_tool_call(request, run))

    def _running(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], T],
        ran: list[ToolCallRequest],
    ) -> Callable[[ToolCallRequest], T]:
        """``handler`` (sync, or async: its awaitable is handed on), noting in ``ran`` the
        calls it runs and, for the log, the arguments each runs with (an operator's edit)."""
        self._require_checkpointer(request)

        gated = request.tool_call.get("name") in self.interrupt_on
        locks = current_saga_locks() if gated else None

        def run(to_run: ToolCallRequest) -> T:
            ran.append(to_run)
            note_executed_args(dict(to_run.tool_call.get("args") or {}))
            if locks is not None:  # approved: marked before it runs, so a rejection undoes it
                locks.note_approved(self._key(to_run.tool_call, to_run.state))
            return handler(to_run)

        return run


def _refused_or(
    request: ToolCallRequest, ran: list[ToolCallRequest], result: ToolMessage | Command[Any]
) -> ToolMessage | Command[Any]:
    """``result``, unless the operator rejected the call: then ToolRejectedError.

    LangChain answers a rejected call with an error message to the model, without running
    the tool; the gate refuses it instead, so a rejection fails the run.
    """
    if ran or not isinstance(result, ToolMessage) or result.status != "error":
        return result
    name = request.tool_call.get("name")
    # LangChain's wording: "User rejected the tool call for `tool` with reason: <why>".
    text = content_text(result)
    why = text.split(_REASON, 1)[1] if _REASON in text else "no reason given"
    raise ToolRejectedError(f"operator rejected {name} (call {request.tool_call.get('id')}): {why}")


_REASON = " with reason: "
"""What precedes the operator's reason in the message LangChain writes for a rejection."""
