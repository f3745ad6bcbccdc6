"""The tool-call log: one record per call an agent made, kept in checkpointed state.

Calls are numbered by their position among every tool call the agent's messages hold, so a
call's number, and so its idempotency key ``<scope>:call-<n>``, is the same on every run of
the node that makes it: the model's message with the calls is checkpointed before the tools
run, and a tools node that runs again after a crash numbers them alike. A call that started
but whose result never reached a checkpoint (the process died) has no record; it is found in
the messages (:func:`unrecorded_calls`) and undone by its key all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from sagagraph.saga.view import Event, make_event
from sagagraph.tools.calls import TOOL_CALL, TOOL_UNDO

CallStatus = Literal["forward", "failed", "unknown", "undone", "undo_failed"]
"""``forward``: the call took effect (or may have: its result was lost). ``failed``: the tool
reported an error, so nothing took effect. ``unknown``: the call failed, yet an earlier run of
it may have taken effect (an operator rejected a call that an approval may have run before
its process died): a rollback undoes it by its key, or reports it when it is irreversible.
``undone``: its undo ran. ``undo_failed``: its undo gave up, or the tool is irreversible; the
call is still in effect."""


class ToolCall(TypedDict):
    """One tool call of an agent, as the log keeps it (plain data, checkpoint-safe)."""

    key: str
    """Idempotency key ``<scope>:call-<n>``, seen by the forward call and by its undo."""
    n: int
    """Position of the call among all the agent's tool calls, from 1."""
    tool: str
    """Tool name."""
    args: dict[str, Any]
    """Arguments the model gave."""
    result: str | None
    """What the tool returned (its message content); None when the result was lost."""
    status: CallStatus
    """Where the call stands."""
    ts: str
    """When the record was written (ISO-8601 UTC)."""


_RANK: dict[str, int] = {"forward": 0, "failed": 0, "unknown": 0, "undo_failed": 1, "undone": 2}


def merge_tool_calls(
    left: Sequence[ToolCall] | None, right: Sequence[ToolCall] | None
) -> list[ToolCall]:
    """Reducer of the log: one record per key, in call order; an undo is never forgotten.

    A later record of a key replaces the earlier one, except that ``undone`` is never replaced
    by anything and ``undo_failed`` only by ``undone``: a forward record of a sibling call that
    lands in the same superstep as its undo cannot bring the call back to life.
    """
    merged: dict[str, ToolCall] = {c["key"]: c for c in left or []}
    for call in right or []:
        before = merged.get(call["key"])
        if before is None or _RANK[call["status"]] >= _RANK[before["status"]]:
            merged[call["key"]] = call
    return sorted(merged.values(), key=lambda c: c["n"])


def scope_of(label: str, config: RunnableConfig | None = None) -> str:
    """``<thread_id>:<label>``: the prefix of every key of one agent (``saga_id:step``)."""
    configurable = (config if config is not None else get_config()).get("configurable") or {}
    return f"{configurable.get('thread_id') or 'no-thread'}:{label}"


def call_key(scope: str, n: int) -> str:
    """``<scope>:call-<n>``; the scope of a saga step is its key ``saga_id:step``."""
    return f"{scope}:call-{n}"


def call_offset(state: Mapping[str, Any]) -> int:
    """How many of the agent's tool calls are no longer in its messages: a summarization
    (LangChain's ``SummarizationMiddleware``) replaced the messages that held them. Calls
    are numbered after them, so a key is never given twice (``tool_call_offset``)."""
    return int(state.get("tool_call_offset") or 0)


def numbered_calls(
    messages: Sequence[BaseMessage], offset: int = 0
) -> list[tuple[int, dict[str, Any]]]:
    """Every tool call the model asked for in ``messages``, with its number, in order
    (numbers start after ``offset``, the calls summarized away)."""
    calls: list[tuple[int, dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls.append((offset + len(calls) + 1, dict(call)))
    return calls


def calls_so_far(state: Mapping[str, Any]) -> int:
    """How many tool calls the agent's state has numbered: the last call's number."""
    return call_offset(state) + len(numbered_calls(list(state.get("messages") or [])))


def call_number(messages: Sequence[BaseMessage], call_id: str | None, offset: int = 0) -> int:
    """The number of the model's tool call ``call_id``; a new number when it is not there."""
    calls = numbered_calls(messages, offset)
    return next((n for n, call in calls if call.get("id") == call_id), offset + len(calls) + 1)


def answered_ids(messages: Iterable[BaseMessage]) -> set[str]:
    """Ids of the tool calls that got their answer (a tool message) into the messages."""
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def unrecorded_calls(
    messages: Sequence[BaseMessage],
    log: Sequence[ToolCall],
    scope: str,
    needs_undo: Mapping[str, bool],
    *,
    after: int = 0,
    offset: int = 0,
) -> list[ToolCall]:
    """Calls that started but left no record: their result was lost in a crash.

    Only tools in ``needs_undo`` with a True value count (compensable and irreversible ones);
    a call already answered in the messages did not lose its result. ``offset``: the calls
    summarized away (:func:`call_offset`).
    """
    recorded = {c["key"] for c in log}
    answered = answered_ids(messages)
    lost: list[ToolCall] = []
    for n, call in numbered_calls(messages, offset):
        key = call_key(scope, n)
        if n <= after or key in recorded or call.get("id") in answered:
            continue
        if needs_undo.get(str(call.get("name")), False):
            lost.append(new_record(key, n, str(call["name"]), call.get("args") or {}, None))
    return lost


def new_record(
    key: str,
    n: int,
    tool: str,
    args: Mapping[str, Any],
    result: str | None,
    status: CallStatus = "forward",
) -> ToolCall:
    """A log record, stamped now."""
    return {
        "key": key,
        "n": n,
        "tool": tool,
        "args": dict(args),
        "result": result,
        "status": status,
        "ts": make_event("", "", "")["ts"],
    }


LIVE: tuple[CallStatus, ...] = ("forward", "unknown", "undo_failed")
"""Statuses of calls that are, or may be, in effect: a rollback undoes them."""


def to_undo(calls: Iterable[ToolCall], *, after: int = 0) -> list[ToolCall]:
    """Calls still in effect, newest first: the order a rollback undoes them in."""
    live = [c for c in calls if c["n"] > after and c["status"] in LIVE]
    return sorted(live, key=lambda c: c["n"], reverse=True)


def tool_event(
    step: str, action: str, outcome: str, call: ToolCall, detail: str = "", *, attempt: int = 1
) -> Event:
    """An event of the audit trail about one call (``tool_call``) or its undo (``tool_undo``)."""
    assert action in (TOOL_CALL, TOOL_UNDO)
    event = make_event(step, action, outcome, attempt, detail or f"{call['tool']} {call['key']}")
    event["tool"] = call["tool"]
    event["key"] = call["key"]
    return event


def content_text(message: ToolMessage) -> str:
    """A tool message's content as text (a list of content blocks is joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(str(c.get("text", c)) if isinstance(c, dict) else str(c) for c in content)
