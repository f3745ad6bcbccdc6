"""An LLM agent that calls tools, run as one saga step: :func:`agent_step`.

The step's local transaction is a ``create_agent`` run. Its compensation undoes the calls the
agent made, newest first, each under the step's compensation retry policy, then escalates like
any compensation when one cannot be undone. Because the saga compensates committed steps in
reverse order, a failed saga undoes every agent's calls in exact reverse chronological order.

Where the log lives: the agent runs inside the step's node, so LangGraph stores the agent's
state (messages and the ``tool_calls`` log) in the saga's own checkpointer, under the step's
checkpoint namespace on the saga's thread, after each of the agent's supersteps. A process
killed mid-run is recovered from there: resuming re-runs the step, whose agent carries on from
its last checkpoint (finished calls are not made again); a rollback reads the log from there
and also undoes, by its idempotency key, a call whose result was lost in the crash. The
rollback finds that checkpointer through the saga's lease, which lends it
(:mod:`sagagraph.checkpoints.savers`): LangGraph gives a node no public handle on its saver.

Under an async saga (``arun_saga``) the agent runs with ``ainvoke``
(:meth:`AgentParticipant.aexecute`); its compensation, whose undos are plain functions, runs
on the step pool, as any sync compensation does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.graph.state import CompiledStateGraph

from sagagraph.checkpoints.savers import lent_checkpointer
from sagagraph.errors import ConfigurationError
from sagagraph.saga.execution import emit_event
from sagagraph.saga.protocol import Deps, Retry, Step, StepContext, StepResult, Usage
from sagagraph.saga.view import describe_error
from sagagraph.tools.calls import TOOL_CALL, TOOL_UNDO
from sagagraph.tools.declare import (
    ToolPolicy,
    holding_locks_for,
    lock_key,
    lock_owner,
    policies,
)
from sagagraph.tools.middleware import ToolCompensationMiddleware, own_middleware
from sagagraph.tools.records import (
    ToolCall,
    call_offset,
    merge_tool_calls,
    to_undo,
    tool_event,
    unrecorded_calls,
)
from sagagraph.tools.undo import DEFAULT_UNDO_RETRY, undo_calls

PromptFn = Callable[[StepContext[Deps]], str]
"""The task the agent gets, from the saga's input and the earlier steps' results."""
ModelFn = Callable[[Deps], BaseChatModel]
"""The chat model, taken from the saga's deps (``lambda deps: deps.chat_model``)."""
Agent = CompiledStateGraph[Any, Any, Any, Any]


@dataclass
class AgentParticipant(Generic[Deps]):
    """A participant whose ``execute`` is a ``create_agent`` run with logged tool calls.

    Build it with :func:`agent_step`, which also sets the step's policies.
    """

    name: str
    """The step name; also the label in the calls' keys (``saga_id:step:call-n``)."""
    model: BaseChatModel | ModelFn[Deps]
    """The chat model, or a function that takes it from the saga's deps."""
    tools: Sequence[BaseTool]
    """The agent's tools, each declared compensable, read-only or irreversible."""
    prompt: PromptFn[Deps]
    """The task handed to the agent as its first message."""
    system_prompt: str | None = None
    """The agent's instructions."""
    undo_retry: Retry = DEFAULT_UNDO_RETRY
    """Retry policy of each undo (the step's compensation retry policy)."""
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = ()
    """More ``create_agent`` middleware, after sagagraph's own (the call log, then the
    approval gate when a tool needs one)."""
    _agents: dict[int, Agent] = field(default_factory=dict, repr=False)
    _policies: dict[str, ToolPolicy] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._policies = policies(list(self.tools))

    # -- the forward local transaction --------------------------------------------------

    def execute(self, ctx: StepContext[Deps]) -> StepResult:
        """Run the agent on the step's task; its calls' events go to the saga's trail."""
        agent = self._agent(ctx)
        try:
            with holding_locks_for(ctx.locks):
                final = agent.invoke({"messages": [HumanMessage(self.prompt(ctx))]})
        except GraphBubbleUp:
            raise
        except Exception as error:
            state = _checkpointed_state(agent)
            if state is not None:
                self._emit_calls(ctx, state, error)
            raise
        return self._result(ctx, final)

    async def aexecute(self, ctx: StepContext[Deps]) -> StepResult:
        """:meth:`execute` for an async saga (``arun_saga``): the agent runs with ``ainvoke``,
        so its model calls and async tools share the saga's event loop."""
        agent = self._agent(ctx)
        try:
            with holding_locks_for(ctx.locks):
                final = await agent.ainvoke({"messages": [HumanMessage(self.prompt(ctx))]})
        except GraphBubbleUp:
            raise
        except Exception as error:
            state = await _acheckpointed_state(agent)
            if state is not None:
                self._emit_calls(ctx, state, error)
            raise
        return self._result(ctx, final)

    def _result(self, ctx: StepContext[Deps], final: Mapping[str, Any]) -> StepResult:
        if final.get("__interrupt__"):
            # Inside a checkpointed saga graph a pause propagates as GraphInterrupt; a run that
            # returns paused had no checkpointer, so nothing could ever resume it.
            raise ConfigurationError(
                f"step {ctx.step!r}: the agent paused (interrupt) outside a checkpointed saga "
                "graph, where nothing can resume it; run the saga orchestrated"
            )
        self._emit_calls(ctx, final)
        messages: list[BaseMessage] = list(final.get("messages") or [])
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        start = int(final.get("tool_run_start") or 0)
        calls = [c for c in final.get("tool_calls") or [] if c["n"] > start]
        return StepResult(
            data={"answer": _text(answer), "tool_calls": calls},
            usage=_usage(messages),
        )

    def _agent(self, ctx: StepContext[Deps]) -> Agent:
        model = self.model if isinstance(self.model, BaseChatModel) else self.model(ctx.deps)
        agent = self._agents.get(id(model))
        if agent is None:
            recorder = ToolCompensationMiddleware(self.name, rollback_on_failure=False)
            agent = create_agent(
                model,
                list(self.tools),
                system_prompt=self.system_prompt,
                middleware=[
                    *own_middleware(recorder.bind_tools(self.tools), self.tools),
                    *self.middleware,
                ],
                name=self.name,
            )
            self._agents[id(model)] = agent
        return agent

    def _emit_calls(
        self, ctx: StepContext[Deps], state: Mapping[str, Any], error: BaseException | None = None
    ) -> None:
        # From the log, not as each call happens: calls made before a crash are then
        # recorded once, when the resumed run ends.
        start = int(state.get("tool_run_start") or 0)
        for call in state.get("tool_calls") or []:
            if call["n"] > start:
                outcome = "error" if call["status"] in ("failed", "unknown") else "ok"
                detail = f"{call['tool']} {call['key']} -> {call['result'] or ''}"[:300]
                emit_event(tool_event(ctx.step, TOOL_CALL, outcome, call, detail))
        if error is None:
            return
        # The calls of the tools node that raised: no record reached the log.
        messages = list(state.get("messages") or [])
        log = list(state.get("tool_calls") or [])
        lost = unrecorded_calls(
            messages, log, ctx.idempotency_key, self._needs_undo(), offset=call_offset(state)
        )
        for call in lost:
            detail = f"{call['tool']} {call['key']} -> {describe_error(error)}"[:300]
            emit_event(tool_event(ctx.step, TOOL_CALL, "error", call, detail))

    def _needs_undo(self) -> dict[str, bool]:
        return {name: p.kind != "read_only" for name, p in self._policies.items()}

    # -- the compensation -----------------------------------------------------------------

    def compensate(self, ctx: StepContext[Deps], result: StepResult | None) -> None:
        """Undo the agent's calls newest first; ToolUndoError naming what stays in effect.

        The log comes from the committed result, and from the agent's checkpoints on the
        saga's thread (a run that failed or crashed has no result). Calls already undone
        (their ``tool_undo ok`` event is checkpointed) are skipped.
        """
        log: list[ToolCall] = list((result.data.get("tool_calls") or []) if result else [])
        messages: list[BaseMessage] = []
        offset = 0
        for state in _step_checkpoints(ctx):
            log = merge_tool_calls(log, state.get("tool_calls") or [])
            if state.get("messages"):
                messages, offset = list(state["messages"]), call_offset(state)
        lost = unrecorded_calls(
            messages, log, ctx.idempotency_key, self._needs_undo(), offset=offset
        )
        called, done = _trail_keys(ctx)
        # A run cut short by a crash left no tool_call events: record its calls now, so the
        # trail names every call it undoes.
        for call in [*log, *lost]:
            if call["key"] not in called:
                outcome = "error" if call["status"] in ("failed", "unknown") else "ok"
                text = call["result"] if call["result"] is not None else "result lost in a crash"
                detail = f"{call['tool']} {call['key']} -> {text}"[:300]
                emit_event(tool_event(ctx.step, TOOL_CALL, outcome, call, detail))
        due = to_undo([*log, *lost])
        calls = [c for c in due if c["key"] not in done]
        # Undone by an earlier attempt that may have died before releasing their locks.
        for call in due:
            if call["key"] in done:
                self._release_lock(ctx, call)
        report = undo_calls(
            calls,
            self._policies,
            step=ctx.step,
            retry=self.undo_retry,
            emit=emit_event,
            on_undone=lambda call: self._release_lock(ctx, call),
        )
        failure = report.error()
        if failure is not None:
            raise failure

    def _release_lock(self, ctx: StepContext[Deps], call: ToolCall) -> None:
        """Release the lock ``call`` took (a tool declared with ``lock=``): its effect is
        undone, so the resource is free for other sagas before this saga ends. Only a key
        held under this call's name is released: one an earlier call or a step of the saga
        took stays with the saga."""
        policy = self._policies.get(call["tool"])
        if ctx.locks is None or policy is None or policy.lock is None:
            return
        with suppress(ConfigurationError):  # the call lacked the argument: it took no lock
            key = lock_key(call["tool"], policy.lock, call["args"] or {})
            ctx.locks.release_key(key, lock_owner(call["n"], ctx.step))


def agent_step(
    name: str,
    model: BaseChatModel | ModelFn[Deps],
    tools: Sequence[BaseTool],
    *,
    prompt: PromptFn[Deps],
    system_prompt: str | None = None,
    undo_retry: Retry = DEFAULT_UNDO_RETRY,
    timeout: float | None = None,
    after: tuple[str, ...] | None = None,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
) -> Step[Deps]:
    """A saga step whose local transaction is a ``create_agent`` agent calling ``tools``.

    ``model`` is a chat model, or a function that takes one from the saga's deps (``lambda
    deps: deps.chat_model``), so one definition serves any model. Every tool must be
    declared (:func:`~sagagraph.tools.compensable`, ``read_only``, ``irreversible``).
    ``undo_retry`` is the compensation retry policy, applied to each undo; an undo that still
    fails (or an irreversible call) makes the compensation escalate to an operator. The agent
    run is not retried as a whole: the model decides, within the run, how to handle a tool error.

    ``middleware`` is more ``create_agent`` middleware (LangChain's call limits,
    summarization, retries...), run after sagagraph's own: the call log, then, when a tool is
    declared with ``approval=True``, the approval gate (:class:`ToolApprovalMiddleware`).
    """
    participant = AgentParticipant(
        name, model, list(tools), prompt, system_prompt, undo_retry, list(middleware)
    )
    # The participant retries each undo itself (ToolUndoError is permanent for the engine):
    # a retry of the whole compensation would undo again what was already undone.
    return Step(
        participant, retry=Retry(), compensation_retry=Retry(), timeout=timeout, after=after
    )


def _checkpointed_state(agent: Agent) -> Mapping[str, Any] | None:
    """The agent's state as its last checkpoint holds it; None outside a checkpointed graph
    (no run, or LangGraph's ValueError "No checkpointer set")."""
    config = _run_config()
    with suppress(ValueError):
        values: Mapping[str, Any] | None = config and agent.get_state(config).values
        return values
    return None


async def _acheckpointed_state(agent: Agent) -> Mapping[str, Any] | None:
    """:func:`_checkpointed_state` through the saver's async methods."""
    config = _run_config()
    with suppress(ValueError):
        values: Mapping[str, Any] | None = config and (await agent.aget_state(config)).values
        return values
    return None


def _run_config() -> RunnableConfig | None:
    """The config of the LangGraph run this call belongs to; None outside one (a
    choreographed step, a test calling the participant)."""
    try:
        return get_config()
    except RuntimeError:
        return None


def _saga_checkpointer(ctx: StepContext) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer the saga lives in, which its lease lends; None outside a graph run.

    ConfigurationError in a graph run that holds no lease (``app.invoke``): the step cannot
    read what its agent did, and says so rather than leave calls in effect (it escalates).
    """
    saver = lent_checkpointer(ctx.saga_id)
    config = _run_config() or {}
    if saver is None and (config.get("configurable") or {}).get("thread_id"):
        raise ConfigurationError(
            f"step {ctx.step!r}: an agent step's rollback reads its agent's checkpoints "
            "through the saga's lease; run, resume and roll back the saga with sagagraph "
            "(run_saga, resume_saga, approve_tool_call, recover_sagas...), not app.invoke"
        )
    return saver


def _step_checkpoints(ctx: StepContext) -> list[Mapping[str, Any]]:
    """The latest state of each run of this step's agent on the saga's thread, oldest first.

    A step's agent runs under the namespace ``<step>:<task id>``; the task id is the same when
    the step re-runs after a crash, so there is usually one.
    """
    saver = _saga_checkpointer(ctx)
    if saver is None:
        return []
    latest: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for item in saver.list({"configurable": {"thread_id": ctx.saga_id}}):
        ns = str(item.config["configurable"].get("checkpoint_ns") or "")
        if "|" in ns or ns.split(":", 1)[0] != ctx.step:
            continue
        checkpoint_id = str(item.checkpoint["id"])
        if ns not in latest or checkpoint_id > latest[ns][0]:
            latest[ns] = (checkpoint_id, item.checkpoint["channel_values"])
    return [values for _, values in sorted(latest.values(), key=lambda pair: pair[0])]


def _trail_keys(ctx: StepContext) -> tuple[set[str], set[str]]:
    """Keys with a ``tool_call`` event, and keys with a ``tool_undo ok`` event, in the saga's
    checkpointed trail (an earlier attempt's undos are not run again)."""
    saver = _saga_checkpointer(ctx)
    root = None
    if saver is not None:
        root = saver.get_tuple({"configurable": {"thread_id": ctx.saga_id, "checkpoint_ns": ""}})
    if root is None:
        return set(), set()
    events = root.checkpoint["channel_values"].get("events") or []
    mine = [e for e in events if e.get("step") == ctx.step and e.get("key")]
    called = {str(e["key"]) for e in mine if e.get("action") == TOOL_CALL}
    undone = {
        str(e["key"]) for e in mine if e.get("action") == TOOL_UNDO and e.get("outcome") == "ok"
    }
    return called, undone


def _text(message: AIMessage | None) -> str:
    if message is None:
        return ""
    content = message.content
    return content if isinstance(content, str) else str(content)


def _usage(messages: Sequence[BaseMessage]) -> Usage:
    tokens: Usage = {"input_tokens": 0, "output_tokens": 0}
    for message in messages:
        meta = getattr(message, "usage_metadata", None)
        if isinstance(message, AIMessage) and meta:
            tokens["input_tokens"] += int(meta.get("input_tokens", 0))
            tokens["output_tokens"] += int(meta.get("output_tokens", 0))
    return tokens
