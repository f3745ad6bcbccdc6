"""``ToolCompensationMiddleware``: compensable tool calls for a plain ``create_agent`` agent.

It records every call of a declared tool in the agent's state (key ``tool_calls``), so the
agent's own checkpointer makes the log durable. When the run fails as a whole (a tool or the
model raises), it undoes this run's calls newest first, each under its retry policy, records
the undos in the log, and re-raises. The rules:

- A tool error the model can see and recover from (the tool reported it as an error message)
  is not a failure of the run: the call is logged ``failed`` and nothing is undone.
- A call is never undone twice: the rollback is checkpointed as part of the state before the
  error is raised (by the ``after_agent`` hook), so resuming the failed run raises again
  without undoing again, and :meth:`ToolCompensationMiddleware.rollback` skips what is undone.
- A failed undo is never swallowed: retried, then reported as :class:`ToolUndoError` naming
  every call left in effect (chained to the run's error).

Under a saga (``rollback_on_failure=False``, see :mod:`sagagraph.tools.agent_step`) it only
records: the saga's compensation undoes the calls, across agents.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain.agents.middleware.types import ModelCallResult, OmitFromInput
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from sagagraph.errors import AgentRunError, ToolUndoError
from sagagraph.saga.protocol import Retry
from sagagraph.saga.view import describe_error
from sagagraph.tools.declare import ToolPolicy, calling_with_key, require_policy
from sagagraph.tools.records import (
    CallStatus,
    ToolCall,
    call_key,
    call_number,
    content_text,
    merge_tool_calls,
    new_record,
    numbered_calls,
    to_undo,
    unrecorded_calls,
)
from sagagraph.tools.undo import DEFAULT_UNDO_RETRY, UndoReport, undo_calls


class ToolLogState(AgentState[Any]):
    """The agent state the middleware adds to: the log and this run's rollback, if any."""

    tool_calls: NotRequired[Annotated[list[ToolCall], OmitFromInput, merge_tool_calls]]
    """Every declared tool call of this thread, in call order (see :class:`ToolCall`)."""
    tool_run_start: NotRequired[Annotated[int, OmitFromInput]]
    """How many tool calls the thread held when this run started: the run's calls follow."""
    tool_rollback: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]
    """Set when this run failed and was rolled back: the error, and what stayed in effect."""


def scope_of(label: str, config: RunnableConfig | None = None) -> str:
    """``<thread_id>:<label>``: the prefix of every key of one agent (``saga_id:step``)."""
    configurable = (config if config is not None else get_config()).get("configurable") or {}
    return f"{configurable.get('thread_id') or 'no-thread'}:{label}"


class ToolCompensationMiddleware(AgentMiddleware[ToolLogState, Any, Any]):
    """Log declared tool calls in the agent's state; on a failed run undo them and re-raise.

    ``label`` names the agent in its keys (``<thread_id>:<label>:call-<n>``). ``undo_retry``
    is the retry policy of each undo. ``rollback_on_failure=False`` only records (a saga
    step's compensation undoes the calls instead).
    """

    state_schema = ToolLogState

    def __init__(
        self,
        label: str = "agent",
        *,
        undo_retry: Retry = DEFAULT_UNDO_RETRY,
        rollback_on_failure: bool = True,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__()
        self.label = label
        self.undo_retry = undo_retry
        self.rollback_on_failure = rollback_on_failure
        self._sleep = sleep
        self._tools: dict[str, BaseTool] = {}
        # The run's own error, to re-raise as itself in this process; another process
        # (resuming after a crash) raises AgentRunError with its description.
        self._errors: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    # -- hooks ---------------------------------------------------------------------------

    def before_agent(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return {"tool_run_start": len(numbered_calls(state["messages"])), "tool_rollback": None}

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        # A rolled-back run asks the model nothing more: straight to after_agent, which raises.
        return {"jump_to": "end"} if state.get("tool_rollback") else None

    def after_agent(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        rollback = state.get("tool_rollback")
        if not rollback:
            return None
        with self._lock:
            original = self._errors.pop(rollback["scope"] + ":" + str(rollback["at"]), None)
        if original is None:
            original = AgentRunError(f"agent run failed and was rolled back: {rollback['error']}")
        if rollback["not_undone"]:
            raise ToolUndoError(rollback["message"], list(rollback["not_undone"])) from original
        raise original

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        tool = request.tool
        if tool is None:  # a tool the agent does not have: ToolNode answers with an error
            return handler(request)
        self._tools.setdefault(tool.name, tool)
        messages: list[BaseMessage] = list(request.state.get("messages") or [])
        scope = scope_of(self.label)
        n = call_number(messages, request.tool_call.get("id"))
        key = call_key(scope, n)
        args = dict(request.tool_call.get("args") or {})
        try:
            policy = require_policy(tool)
            with calling_with_key(key):
                response = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if not self.rollback_on_failure:
                raise
            failed = new_record(key, n, tool.name, args, describe_error(error), "failed")
            message = ToolMessage(
                content=f"error: {describe_error(error)}",
                tool_call_id=str(request.tool_call.get("id")),
                status="error",
            )
            update = self._roll_back(request.state, scope, error, [failed])
            update["messages"] = [message]
            return Command(update=update)
        if policy.kind == "read_only" or not isinstance(response, ToolMessage):
            return response
        status: CallStatus = "failed" if response.status == "error" else "forward"
        record = new_record(key, n, tool.name, args, content_text(response), status)
        return Command(update={"messages": [response], "tool_calls": [record]})

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult:
        try:
            return handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if not self.rollback_on_failure:
                raise
            update = self._roll_back(request.state, scope_of(self.label), error, [])
            # An empty answer ends the loop; after_agent then raises the run's error.
            empty = ModelResponse(result=[AIMessage(content="")])
            return ExtendedModelResponse(model_response=empty, command=Command(update=update))

    # -- rollback ------------------------------------------------------------------------

    def _plan(
        self, state: Mapping[str, Any], scope: str, extra: Sequence[ToolCall]
    ) -> tuple[list[ToolCall], list[ToolCall]]:
        """(calls to undo newest first, records of calls whose result was lost)."""
        log = merge_tool_calls(state.get("tool_calls") or [], extra)
        after = int(state.get("tool_run_start") or 0)
        needs_undo = {name: p.kind != "read_only" for name, p in self._policies().items()}
        messages = list(state.get("messages") or [])
        lost = unrecorded_calls(messages, log, scope, needs_undo, after=after)
        return to_undo([*log, *lost], after=after), lost

    def _roll_back(
        self,
        state: Mapping[str, Any],
        scope: str,
        error: BaseException,
        extra: list[ToolCall],
    ) -> dict[str, Any]:
        calls, lost = self._plan(state, scope, extra)
        report = self._undo(calls)
        at = len(numbered_calls(list(state.get("messages") or [])))
        with self._lock:
            self._errors[f"{scope}:{at}"] = error
        return {
            "tool_calls": [*extra, *lost, *report.records],
            "tool_rollback": _rollback_marker(scope, at, error, report),
        }

    def _policies(self) -> dict[str, ToolPolicy]:
        return {name: require_policy(tool) for name, tool in self._tools.items()}

    def _undo(self, calls: list[ToolCall]) -> UndoReport:
        sleep = self._sleep if self._sleep is not None else time.sleep
        return undo_calls(
            calls, self._policies(), step=self.label, retry=self.undo_retry, sleep=sleep
        )

    def bind_tools(self, tools: Sequence[BaseTool]) -> ToolCompensationMiddleware:
        """Tell the middleware the agent's tools, so a rollback finds each tool's undo.

        :func:`create_compensating_agent` does this; call it yourself when you pass the
        middleware to ``create_agent`` directly. Every tool must be declared.
        """
        for tool in tools:
            require_policy(tool)
        self._tools = {t.name: t for t in tools}
        return self

    def rollback(self, agent: Any, config: RunnableConfig) -> UndoReport:
        """Undo the calls of the thread's last run (after a crash, instead of resuming it).

        Calls whose result was lost in the crash are undone by their key; calls already
        undone are skipped. The undos are written to the agent's state through its
        checkpointer before this returns; ToolUndoError when something stayed in effect.
        """
        state = agent.get_state(config).values
        scope = scope_of(self.label, config)
        calls, lost = self._plan(state, scope, [])
        report = self._undo(calls)
        error = AgentRunError("rolled back on request")
        at = len(numbered_calls(list(state.get("messages") or [])))
        update = {
            "tool_calls": [*lost, *report.records],
            "tool_rollback": _rollback_marker(scope, at, error, report),
        }
        agent.update_state(config, update, as_node="tools")
        failure = report.error()
        if failure is not None:
            raise failure
        return report


def _rollback_marker(
    scope: str, at: int, error: BaseException, report: UndoReport
) -> dict[str, Any]:
    failure = report.error()
    return {
        "scope": scope,
        "at": at,
        "error": describe_error(error),
        "undone": [c["key"] for c in report.undone],
        "not_undone": [c["key"] for c in report.failed],
        "message": str(failure) if failure else "",
    }


def create_compensating_agent(
    model: Any,
    tools: Sequence[Any],
    *,
    label: str = "agent",
    undo_retry: Retry = DEFAULT_UNDO_RETRY,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    **kwargs: Any,
) -> tuple[Any, ToolCompensationMiddleware]:
    """``create_agent(model, tools, middleware=[ToolCompensationMiddleware, ...])``.

    Returns the compiled agent and its middleware (whose :meth:`~ToolCompensationMiddleware.
    rollback` undoes a crashed run). Every tool must be declared compensable, read-only or
    irreversible; ``kwargs`` go to ``create_agent`` (``checkpointer``, ``system_prompt``...).
    """
    from langchain.agents import create_agent

    compensation = ToolCompensationMiddleware(label, undo_retry=undo_retry).bind_tools(tools)
    agent = create_agent(model, list(tools), middleware=[compensation, *middleware], **kwargs)
    return agent, compensation
