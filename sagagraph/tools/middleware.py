"""``ToolCompensationMiddleware``: compensable tool calls for a plain ``create_agent`` agent.

It records every call of a declared tool in the agent's state (key ``tool_calls``), so the
agent's own checkpointer makes the log durable. When the run fails as a whole (a tool or the
model raises), it undoes this run's calls newest first, each under its retry policy, records
the undos in the log, and re-raises. docs/tools.md (section 3) gives the rules: a tool error
the model can see is no failure of the run; the rollback waits until every call of a turn has
settled (it runs in the ``before_model`` step after the turn); it is checkpointed before the
error is raised (by ``after_agent``), so no call is undone twice; a failed undo is retried,
then reported as :class:`ToolUndoError`. Under ``ainvoke`` the undos run in a worker thread.

Under a saga (``rollback_on_failure=False``, see :mod:`sagagraph.tools.agent_step`) it only
records: the saga's compensation undoes the calls, across agents. A call an operator
rejected (:mod:`sagagraph.tools.approval`) is logged ``failed`` when it was never approved (it
never ran), ``unknown`` when an earlier approval may have run it (a compensable call's undo
runs; an irreversible one goes to an operator); the run then fails with ToolRejectedError once
its turn has settled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents import create_agent
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
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from sagagraph.errors import (
    AgentRunError,
    ConfigurationError,
    DeadlockError,
    LockBusyError,
    LockTimeoutError,
    ToolRejectedError,
    ToolUndoError,
)
from sagagraph.saga.protocol import Retry
from sagagraph.saga.view import describe_error
from sagagraph.tools.approval import ToolApprovalMiddleware, gated_tools
from sagagraph.tools.declare import (
    ToolKind,
    ToolPolicy,
    calling_with_key,
    current_saga_locks,
    lock_key,
    lock_owner,
    require_policy,
)
from sagagraph.tools.records import (
    CallStatus,
    ToolCall,
    call_key,
    call_number,
    call_offset,
    calls_so_far,
    content_text,
    merge_tool_calls,
    new_record,
    numbered_calls,
    scope_of,
    to_undo,
    unrecorded_calls,
)
from sagagraph.tools.undo import DEFAULT_UNDO_RETRY, UndoReport, undo_calls


class ToolFailure(TypedDict):
    """A call whose tool raised: the run fails, and is rolled back once its turn settles."""

    key: str
    """The call's idempotency key."""
    n: int
    """The call's number (see :class:`~sagagraph.tools.records.ToolCall`)."""
    error: str
    """What the tool raised, described in one line."""


def merge_failures(
    left: Sequence[ToolFailure] | None, right: Sequence[ToolFailure] | None
) -> list[ToolFailure]:
    """Reducer of ``tool_failures``: one entry per key, in call order.

    Parallel calls of one turn that fail write in the same superstep; a reducer (rather than
    one value per step) takes each of them.
    """
    merged: dict[str, ToolFailure] = {f["key"]: f for f in left or []}
    merged.update({f["key"]: f for f in right or []})
    return sorted(merged.values(), key=lambda f: f["n"])


class ToolLogState(AgentState[Any]):
    """The agent state the middleware adds to: the log, the failed calls and the rollback."""

    tool_calls: NotRequired[Annotated[list[ToolCall], OmitFromInput, merge_tool_calls]]
    """Every declared tool call of this thread, in call order (see :class:`ToolCall`)."""
    tool_failures: NotRequired[Annotated[list[ToolFailure], OmitFromInput, merge_failures]]
    """Every call of this thread whose tool raised, in call order."""
    tool_run_start: NotRequired[Annotated[int, OmitFromInput]]
    """How many tool calls the thread held when this run started: the run's calls follow."""
    tool_rollback: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]
    """Set when this run failed and was rolled back: the error, and what stayed in effect."""
    tool_call_offset: NotRequired[Annotated[int, OmitFromInput]]
    """Tool calls no longer in the messages (summarized away); later calls number after them."""
    tool_calls_numbered: NotRequired[Annotated[int, OmitFromInput]]
    """Tool calls numbered so far, as of the model's last turn (to notice a summarization)."""


def renumbered(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """After a model turn, before its calls run: the update that keeps call numbers going
    when messages holding earlier calls were summarized away (None: nothing changed).

    Calls are numbered by their place among the tool calls in the messages, plus the
    ``tool_call_offset``. LangChain's ``SummarizationMiddleware`` replaces old messages with
    a summary before a model call; the calls they held would otherwise be numbered again,
    and a new call would take an old call's idempotency key.
    """
    messages = list(state.get("messages") or [])
    last = messages[-1] if messages else None
    new = len(last.tool_calls) if isinstance(last, AIMessage) else 0
    before_turn = len(numbered_calls(messages)) - new
    seen = int(state.get("tool_calls_numbered") or 0)
    offset = max(call_offset(state), seen - before_turn)
    numbered = offset + before_turn + new
    if offset == call_offset(state) and numbered == seen:
        return None
    return {"tool_call_offset": offset, "tool_calls_numbered": numbered}


def run_failures(state: Mapping[str, Any]) -> list[ToolFailure]:
    """The failed calls of the state's current run (those after ``tool_run_start``)."""
    after = int(state.get("tool_run_start") or 0)
    return [f for f in state.get("tool_failures") or [] if f["n"] > after]


class ToolCompensationMiddleware(AgentMiddleware[ToolLogState, Any, Any]):
    """Log declared tool calls in the agent's state; on a failed run undo them and re-raise.

    ``label`` names the agent in its keys (``<thread_id>:<label>:call-<n>``). ``undo_retry``
    is the retry policy of each undo. ``rollback_on_failure=False`` only records (a saga
    step's compensation undoes the calls instead).

    Put it first in ``create_agent``'s ``middleware`` list: its ``before_model`` step, which
    rolls back a turn in which a tool raised, then runs before any other middleware's.
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
        # The run's own errors by key (a call's key, or a model call's), to re-raise as
        # themselves in this process; another process (resuming after a crash) raises
        # AgentRunError with their description.
        self._errors: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    # -- hooks ---------------------------------------------------------------------------

    # A hook without an async twin runs as it is under ``ainvoke`` too: only the rollback,
    # whose undos are plain functions that may block, has one (it runs them in a thread).

    def before_agent(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return {"tool_run_start": calls_so_far(state), "tool_rollback": None}

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        # A rolled-back run asks the model nothing more: straight to after_agent, which raises.
        if state.get("tool_rollback"):
            return {"jump_to": "end"}
        failures = run_failures(state)
        if not failures:
            return None
        if not self.rollback_on_failure:
            raise self._run_error(failures)
        # The turn in which a tool raised has settled: every call's record is in the state.
        return {**self._roll_back_failures(state, failures), "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: ToolLogState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        if state.get("tool_rollback"):
            return {"jump_to": "end"}
        failures = run_failures(state)
        if not failures:
            return None
        if not self.rollback_on_failure:
            raise self._run_error(failures)
        update = await asyncio.to_thread(self._roll_back_failures, state, failures)
        return {**update, "jump_to": "end"}

    def after_model(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return renumbered(state)

    @hook_config(can_jump_to=["model"])
    def after_agent(self, state: ToolLogState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        rollback = state.get("tool_rollback")
        if not rollback:
            # A turn whose tools all return directly ends here; its rollback is still due.
            return {"jump_to": "model"} if run_failures(state) else None
        keys = list(rollback.get("error_keys") or [])
        with self._lock:
            errors = [self._errors.pop(k, None) for k in keys]
        original = errors[0] if errors else None
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
        key, n = self._start(request, tool)
        try:
            policy = require_policy(tool)
            refused = self._take_lock(request, tool, policy, n)
            if refused is not None:
                return self._finished(request, tool, policy, key, n, refused)
            with calling_with_key(key) as flight:
                response = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if not self.rollback_on_failure and not isinstance(error, ToolRejectedError):
                raise
            return self._failed(request, tool, key, n, error)
        return self._finished(request, tool, policy, key, n, response, flight.args)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        tool = request.tool
        if tool is None:
            return await handler(request)
        key, n = self._start(request, tool)
        try:
            policy = require_policy(tool)
            refused = await asyncio.to_thread(self._take_lock, request, tool, policy, n)
            if refused is not None:
                return self._finished(request, tool, policy, key, n, refused)
            with calling_with_key(key) as flight:
                response = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if not self.rollback_on_failure and not isinstance(error, ToolRejectedError):
                raise
            return self._failed(request, tool, key, n, error)
        return self._finished(request, tool, policy, key, n, response, flight.args)

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
            return self._model_failed(self._roll_back_model(request.state, error))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult:
        try:
            return await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if not self.rollback_on_failure:
                raise
            update = await asyncio.to_thread(self._roll_back_model, request.state, error)
            return self._model_failed(update)

    def _run_error(self, failures: list[ToolFailure]) -> BaseException:
        """The error a run that only records (a saga step) fails with once its turn settled:
        the first failed call's own error in this process, else a ToolRejectedError saying
        it (only rejected calls are noted as failures there)."""
        with self._lock:
            errors = [self._errors.pop(f["key"], None) for f in failures]
        first = next((e for e in errors if e is not None), None)
        return first if first is not None else ToolRejectedError(failures[0]["error"])

    # -- one tool call ---------------------------------------------------------------------

    def _start(self, request: ToolCallRequest, tool: BaseTool) -> tuple[str, int]:
        """The call's key and number (the same on every run of the turn)."""
        self._tools.setdefault(tool.name, tool)
        messages: list[BaseMessage] = list(request.state.get("messages") or [])
        n = call_number(messages, request.tool_call.get("id"), call_offset(request.state))
        return call_key(scope_of(self.label), n), n

    def _take_lock(
        self, request: ToolCallRequest, tool: BaseTool, policy: ToolPolicy, n: int
    ) -> ToolMessage | None:
        """Take the call's semantic lock (a tool declared with ``lock=``) for the saga, under
        the call's name; None when the call may run, else the tool error the model sees.

        A refusal (the key is busy, the wait timed out or would deadlock, the call lacks an
        argument the key names) is an answer to the model, not a failure of the run: the
        call never ran, so nothing needs undoing, and the model may pick another resource.
        """
        if policy.kind != "compensable" or policy.lock is None:
            return None
        locks = current_saga_locks()
        if locks is None:
            raise ConfigurationError(
                f"tool {tool.name!r} locks {policy.lock!r}, and a lock belongs to a saga: "
                "run the agent as a saga step (agent_step)"
            )
        try:
            key = lock_key(tool.name, policy.lock, dict(request.tool_call.get("args") or {}))
            locks.acquire(
                key,
                lock_owner(n, self.label),
                on_busy=policy.on_busy,
                timeout=policy.lock_timeout,
            )
        except (ConfigurationError, LockBusyError, LockTimeoutError, DeadlockError) as error:
            return ToolMessage(
                content=f"error: {describe_error(error)}",
                tool_call_id=str(request.tool_call.get("id")),
                name=tool.name,
                status="error",
            )
        return None

    def _failed(
        self, request: ToolCallRequest, tool: BaseTool, key: str, n: int, error: Exception
    ) -> Command[Any]:
        """A call whose tool raised: logged ``failed`` and noted, for the rollback to come.

        Nothing is undone here: sibling calls of the same turn may still be running, and the
        rollback must see them settled.
        """
        with self._lock:
            self._errors[key] = error
        args = dict(request.tool_call.get("args") or {})
        described = describe_error(error)
        status: CallStatus = "failed"
        if isinstance(error, ToolRejectedError):
            status, described = _rejected(require_policy(tool).kind, key, described)
        message = ToolMessage(
            content=f"error: {described}",
            tool_call_id=str(request.tool_call.get("id")),
            name=tool.name,
            status="error",
        )
        failure: ToolFailure = {"key": key, "n": n, "error": described}
        return Command(
            update={
                "messages": [message],
                "tool_calls": [new_record(key, n, tool.name, args, described, status)],
                "tool_failures": [failure],
            }
        )

    def _finished(
        self,
        request: ToolCallRequest,
        tool: BaseTool,
        policy: ToolPolicy,
        key: str,
        n: int,
        response: ToolMessage | Command[Any],
        executed_args: dict[str, Any] | None = None,
    ) -> ToolMessage | Command[Any]:
        if policy.kind == "read_only" or not isinstance(response, ToolMessage):
            return response
        # What ran: an operator's edit (ToolApprovalMiddleware), else the model's arguments.
        args = executed_args if executed_args is not None else request.tool_call.get("args")
        args = dict(args or {})
        status: CallStatus = "failed" if response.status == "error" else "forward"
        record = new_record(key, n, tool.name, args, content_text(response), status)
        return Command(update={"messages": [response], "tool_calls": [record]})

    # -- rollback ------------------------------------------------------------------------

    def _roll_back(
        self, state: Mapping[str, Any], scope: str, error: str, error_keys: list[str]
    ) -> tuple[UndoReport, dict[str, Any]]:
        """Undo the run's calls in effect, newest first (a call whose result was lost in a
        crash by its key); the report, and the state update recording the undos and the
        rollback (``error`` describes the run's failure, ``error_keys`` find its errors)."""
        log = list(state.get("tool_calls") or [])
        after = int(state.get("tool_run_start") or 0)
        needs_undo = {name: p.kind != "read_only" for name, p in self._policies().items()}
        messages = list(state.get("messages") or [])
        offset = call_offset(state)
        lost = unrecorded_calls(messages, log, scope, needs_undo, after=after, offset=offset)
        report = self._undo(to_undo([*log, *lost], after=after))
        marker = _rollback_marker(scope, calls_so_far(state), error, error_keys, report)
        return report, {"tool_calls": [*lost, *report.records], "tool_rollback": marker}

    def _roll_back_failures(
        self, state: Mapping[str, Any], failures: list[ToolFailure]
    ) -> dict[str, Any]:
        """The rollback of a turn in which tools raised; the first of them is the run's error."""
        keys = [f["key"] for f in failures]
        return self._roll_back(state, scope_of(self.label), failures[0]["error"], keys)[1]

    def _roll_back_model(self, state: Mapping[str, Any], error: Exception) -> dict[str, Any]:
        scope = scope_of(self.label)
        error_key = f"{scope}:model:{calls_so_far(state)}"
        with self._lock:
            self._errors[error_key] = error
        return self._roll_back(state, scope, describe_error(error), [error_key])[1]

    @staticmethod
    def _model_failed(update: dict[str, Any]) -> ModelCallResult:
        # An empty answer ends the loop; after_agent then raises the run's error.
        empty = ModelResponse(result=[AIMessage(content="")])
        return ExtendedModelResponse(model_response=empty, command=Command(update=update))

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
        A run rolled back already keeps its error: resuming it raises that error.
        """
        state = agent.get_state(config).values
        report, update = self._rollback_on_request(state, config)
        if update is not None:
            agent.update_state(config, update, as_node="tools")
        return _reported(report)

    async def arollback(self, agent: Any, config: RunnableConfig) -> UndoReport:
        """:meth:`rollback` for async code (``aget_state``/``aupdate_state``; the undos run
        in a worker thread)."""
        state = (await agent.aget_state(config)).values
        report, update = await asyncio.to_thread(self._rollback_on_request, state, config)
        if update is not None:
            await agent.aupdate_state(config, update, as_node="tools")
        return _reported(report)

    def _rollback_on_request(
        self, state: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[UndoReport, dict[str, Any] | None]:
        """The undos of :meth:`rollback`, and its state update (None: nothing to write)."""
        before = state.get("tool_rollback")
        failures = run_failures(state)
        if before:
            error, keys = str(before["error"]), list(before.get("error_keys") or [])
        elif failures:
            error, keys = failures[0]["error"], [f["key"] for f in failures]
        else:
            error, keys = describe_error(AgentRunError("rolled back on request")), []
        report, update = self._roll_back(state, scope_of(self.label, config), error, keys)
        if before and not update["tool_calls"]:
            return report, None  # rolled back already, and nothing is left to undo
        return report, update


def _rejected(kind: ToolKind, key: str, described: str) -> tuple[CallStatus, str]:
    """The status and description of a call an operator rejected: ``unknown`` when an
    earlier approval may have run it, else ``failed`` (it never ran).

    An approval of the call may have run it in a process that died before the result was
    checkpointed: the approval mark (written before the call runs) tells. Its outcome is
    then unknown, whatever the tool: a compensable call's undo (idempotent by key) runs with
    the rollback; an irreversible call cannot be undone, so the rollback reports it to an
    operator (``compensation_failed``) rather than claim it never ran. Outside a saga
    nothing marks approvals: a compensable call's undo runs all the same (harmless when it
    never ran), an irreversible call is taken as never run (escalating it would be wrong
    every time the call was simply refused).
    """
    if kind == "read_only":
        return "failed", described
    locks = current_saga_locks()
    marked = locks is not None and locks.approved(key)
    if marked or (locks is None and kind == "compensable"):
        then = "its undo runs" if kind == "compensable" else "an operator must check"
        return "unknown", f"{described}; an earlier approval may have run it, so {then}"
    if locks is None:
        return "failed", described
    return "failed", f"{described}; never approved, so it never ran"


def _reported(report: UndoReport) -> UndoReport:
    failure = report.error()
    if failure is not None:
        raise failure
    return report


def _rollback_marker(
    scope: str, at: int, error: str, error_keys: list[str], report: UndoReport
) -> dict[str, Any]:
    """What the state keeps of a rollback: the run's error (described, and the keys of its
    errors in this process), and what was undone and what stayed in effect."""
    failure = report.error()
    return {
        "scope": scope,
        "at": at,
        "error": error,
        "error_keys": error_keys,
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
    A tool declared ``approval=True`` adds the approval gate
    (:class:`~sagagraph.tools.approval.ToolApprovalMiddleware`) after the compensation
    middleware; ``middleware`` (LangChain's or yours) follows.
    """
    compensation = ToolCompensationMiddleware(label, undo_retry=undo_retry).bind_tools(tools)
    agent = create_agent(
        model, list(tools), middleware=[*own_middleware(compensation, tools), *middleware], **kwargs
    )
    return agent, compensation


def own_middleware(
    compensation: ToolCompensationMiddleware, tools: Sequence[BaseTool]
) -> list[AgentMiddleware[Any, Any, Any]]:
    """sagagraph's middleware for an agent of ``tools``, first in its list: the call log,
    then the approval gate when a tool is declared ``approval=True``."""
    if not gated_tools(tools):
        return [compensation]
    return [compensation, ToolApprovalMiddleware(tools, label=compensation.label)]
